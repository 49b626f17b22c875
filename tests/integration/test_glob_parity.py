"""A path glob means on PostgreSQL what it means in SQLite, whose ``GLOB`` the folder backend runs: the glob as
``store/filter_sql.py`` compiles it for PostgreSQL, run by a real server, against SQLite's own ``GLOB`` (Python's
sqlite3), on generated globs and paths over the characters that mean something in a glob, a regular expression
or a ``LIKE`` pattern."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from searchapp.filters import Filter
from searchapp.sqlite_driver import dbapi
from searchapp.store.filter_sql import glob_parts, glob_regex, where

sa = pytest.importorskip("sqlalchemy")

# Glob syntax, regular-expression and LIKE metacharacters, a letter on each side of a range, a non-ASCII letter,
# a line break (which "*", "?" and a negated class match).
ALPHABET = "ab*?[]^-!:\\.%_$(|{é\n"
# Any character of it, or a bracketed run of them (a class, most often: random text seldom holds one).
GLOBS = st.lists(st.one_of(
    st.sampled_from(ALPHABET),
    st.builds("[{}{}]".format, st.sampled_from(["", "^", "!"]), st.text(ALPHABET, min_size=1, max_size=4)),
), max_size=6).map("".join)
PATHS = st.lists(st.text("ab[]^-!:\\.%_$(|{é\n", max_size=8), min_size=1, max_size=16)


@pytest.fixture(scope="module")
def pg(pg_server) -> Iterator[sa.Connection]:  # type: ignore[no-untyped-def]
    """One connection to the test server for every example (each statement its own transaction: a glob the server
    refuses fails its example alone)."""
    engine = sa.create_engine(pg_server.url("searchapp_test"), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        yield conn
    engine.dispose()


def sqlite_globs(globs: list[str], paths: list[str]) -> list[list[bool]]:
    """For each path, whether it matches each glob, by SQLite's ``GLOB``."""
    with dbapi().connect(":memory:") as conn:
        return [[bool(conn.execute("SELECT ? GLOB ?", (path, glob)).fetchone()[0]) for glob in globs]
                for path in paths]


def postgres_globs(conn: sa.Connection, globs: list[str], paths: list[str]) -> list[list[bool]]:
    """The same, by each glob's PostgreSQL condition (``where``), all in one statement."""
    conditions, params = [], {"paths": paths}
    for n, glob in enumerate(globs):
        sql, bound = where(Filter(path_glob=glob), docs="d", dialect="postgresql")
        for name, value in bound.items():
            sql = sql.replace(f":{name}", f":g{n}_{name}")
            params[f"g{n}_{name}"] = value
        conditions.append(sql)
    rows = conn.execute(sa.text(
        f"SELECT ARRAY[{', '.join(conditions)}] FROM unnest(CAST(:paths AS text[])) WITH ORDINALITY AS d(path, n) "
        "ORDER BY d.n"), params).scalars().all()
    return [list(row) for row in rows]


# A class, roughly as SQLite reads one: what lies between "[" (and a "^") and the first "]" after a member.
CLASS = re.compile(r"\[\^?(\]?[^\]]*)\]")


def instances(glob: str) -> list[str]:
    """Paths likely to match ``glob`` (generated paths seldom do): the glob itself, with its wildcards filled in
    or dropped, and each class in it replaced by its first or its last character."""
    out = [glob, glob.replace("*", "").replace("?", "a"), glob.replace("*", "ab").replace("?", "\n")]
    for pick in (0, -1):
        filled = CLASS.sub(lambda m, at=pick: m.group(1)[at] if m.group(1) else "", glob)
        out += [filled.replace("*", "").replace("?", "b"), filled.replace("*", "\n]").replace("?", "-")]
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(globs=st.lists(GLOBS, min_size=1, max_size=8), paths=PATHS)
def test_postgresql_matches_a_glob_as_sqlite_does(pg: sa.Connection, globs: list[str], paths: list[str]) -> None:
    paths = list(dict.fromkeys(paths + [p for glob in globs for p in instances(glob)]))
    assert postgres_globs(pg, globs, paths) == sqlite_globs(globs, paths), (globs, paths)


@settings(max_examples=150, deadline=None)
@given(globs=st.lists(GLOBS, min_size=1, max_size=8), paths=PATHS)
def test_the_regex_reads_a_glob_as_sqlite_does_without_a_server(globs: list[str], paths: list[str]) -> None:
    # Where no server runs, Python's re reads the regex as PostgreSQL does: a backslash before an ASCII character
    # other than a letter or digit is that character, ranges go by code point, "." (with DOTALL) any character.
    paths = list(dict.fromkeys(paths + [p for glob in globs for p in instances(glob)]))
    read = [glob_parts(glob) for glob in globs]
    found = [[parts is not None and re.fullmatch(glob_regex(parts), path, re.DOTALL) is not None for parts in read]
             for path in paths]
    assert found == sqlite_globs(globs, paths), (globs, paths)


# The globs reported (hardening, round 4) and their neighbours: classes PostgreSQL would refuse or read otherwise,
# or that match nothing.
EDGES = ["*[z-a]*", "*[[:alpha:]]*", "[[:alpha:]]", "*[^a]*", "[]a]*", "[^]a]*", "*[a-]", "[-a]*", "[a-c-e]",
         "*[b", "[", "a[]", "*\\*", "*.md", "a%_*", "[!a]*", "*[é-ü]*", "[\n]*", "*[a-a]*", "[*]*", "[?]"]


def test_the_globs_postgresql_refused_or_read_otherwise_match_as_in_sqlite(pg: sa.Connection) -> None:
    paths = ["z", "abz", "]", "[", ":", "l]", "a]", "b", "-", "a-", "c", "d", "e", "ab[", "a\\*", "x.md", "xmd",
             "a%_b", "!", "ö", "\n", "*", "?", "a", "é", "ü", "ab"]
    expected = sqlite_globs(EDGES, paths)
    assert postgres_globs(pg, EDGES, paths) == expected
    assert any(any(row) for row in expected) and not all(all(row) for row in expected)  # both answers occur
