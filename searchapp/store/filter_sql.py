"""A :class:`~searchapp.filters.Filter` compiled to SQL: a condition over ``documents`` (metadata as JSON, path
prefix, path glob, collection: the metadata's ``collection`` key) and the SELECT of the passage ids it lets
through, for SQLite (JSON1, ``GLOB``) or PostgreSQL
(``jsonb``; the glob as a ``LIKE`` pattern, or where it has a character class as an anchored regular expression,
matching what SQLite's ``GLOB`` matches: :func:`glob_parts`). Values are always bound parameters."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from searchapp.collection import KEY as COLLECTION_KEY
from searchapp.filters import STRING_FIELDS, Filter
from searchapp.types import NUL

# A SQL SELECT of passage ids with its bound parameters.
Restrict = tuple[str, dict[str, Any]]


# Each dialect's SQL for a filter's parts: ``{f}`` is a metadata field, ``{p}`` a bound parameter's name; a path
# or collection condition (filters.STRING_FIELDS) under its field's name (``{key}``: collection.KEY). A key's
# values are options ORed ("bool", "str", "num"),
# or where the dialect has "any", one test of the field against all of them (each value bound as JSON, "json").
_DIALECTS: dict[str, dict[str, str]] = {
    "sqlite": {
        # json_extract gives JSON true/false as 1/0, so booleans and numbers are told apart by json_type.
        "field": "{docs}.metadata, :{k}",
        "bool": "json_type({f}) = '{b}'",
        "str": "json_extract({f}) = :{p}",  # a SQL text never equals a number: no type check needed
        "num": "(json_type({f}) IN ('integer', 'real') AND json_extract({f}) = :{p})",
        "path_prefix": "substr({docs}.path, 1, length(:{p})) = :{p}",
        "path_glob": "{docs}.path GLOB :{p}",
        "collection": "json_extract({docs}.metadata, '$.\"{key}\"') = :{p}",
        "all": "1",
        "none": "0",
    },
    "postgresql": {
        "field": "(CAST({docs}.metadata AS jsonb) -> CAST(:{k} AS text))",
        # The field is read once for all the key's values (the metadata is text: each read parses it; 256 values
        # read one by one took 1.8 s over 10,000 documents). jsonb equality is the other dialect's: 1 = 1.0, never
        # "1" or true.
        "any": "{f} IN ({values})",
        "json": "CAST(:{p} AS jsonb)",
        "path_prefix": "left({docs}.path, length(:{p})) = :{p}",
        # A glob without a character class is a LIKE pattern: PostgreSQL's regular expressions take time that
        # grows with both the path and the pattern where a "*" comes before many characters (docs/reliability.md).
        "path_glob": "{docs}.path LIKE :{p}",
        "path_glob_class": "{docs}.path ~ :{p}",
        # A JSON string equal to the name, as SQLite's (a number 3 is not the collection "3").
        "collection": "(CAST({docs}.metadata AS jsonb) -> '{key}') = to_jsonb(CAST(:{p} AS text))",
        "all": "TRUE",
        "none": "FALSE",
    },
}


def where(flt: Filter, docs: str = "d", dialect: str = "sqlite") -> tuple[str, dict[str, Any]]:
    """A SQL condition over the documents table aliased ``docs``, and its bound parameters."""
    sql = _DIALECTS[dialect]
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for n, (key, value) in enumerate(sorted(flt.metadata.items())):
        params[f"fk{n}"] = f'$."{key}"' if dialect == "sqlite" else key
        field = sql["field"].format(docs=docs, k=f"fk{n}")
        # No stored value holds a NUL (types.NUL): such a value matches nothing and is never bound.
        values = [v for v in (value if isinstance(value, list) else [value]) if not (isinstance(v, str) and NUL in v)]
        if not values:
            clauses.append(sql["none"])
        elif "any" in sql:
            params.update({f"f{n}_{m}": json.dumps(v) for m, v in enumerate(values)})
            clauses.append(sql["any"].format(f=field, values=", ".join(
                sql["json"].format(p=f"f{n}_{m}") for m in range(len(values)))))
        else:
            clauses.append("(" + " OR ".join(_option(sql, field, v, f"f{n}_{m}", params)
                                              for m, v in enumerate(values)) + ")")
    for name in STRING_FIELDS:  # a condition without its SQL above is a KeyError, never a filter quietly dropped
        value = getattr(flt, name)
        if value is None:
            continue
        if NUL in value:  # no stored path or text id has one (types.NUL): never bound
            clauses.append(sql["none"])
            continue
        form = name
        if (dialect, name) == ("postgresql", "path_glob"):
            parts = glob_parts(value)
            if parts is None:  # SQLite's GLOB matches nothing past an unclosed "["
                clauses.append(sql["none"])
                continue
            classes = any(isinstance(part, GlobClass) for part in parts)
            form, value = ("path_glob_class", glob_regex(parts)) if classes else (name, glob_like(parts))
        params[f"f_{name}"] = value
        clauses.append(sql[form].format(docs=docs, p=f"f_{name}", key=COLLECTION_KEY))
    return " AND ".join(clauses) or sql["all"], params


def _option(sql: dict[str, str], field: str, value: Any, name: str, params: dict[str, Any]) -> str:
    """The condition that ``field`` equals ``value`` (a boolean written in the SQL, another value bound as
    ``name``)."""
    if isinstance(value, bool):
        return sql["bool"].format(f=field, b="true" if value else "false")
    params[name] = value
    return sql["str" if isinstance(value, str) else "num"].format(f=field, p=name)


@dataclass(frozen=True)
class GlobClass:
    """A ``[...]`` of a glob: the characters it holds (each a range ``(first, last)``, a single one ``(c, c)``),
    or with ``negated`` those it does not."""

    negated: bool
    ranges: tuple[tuple[str, str], ...]


# A glob read as SQLite reads it: "*" and "?" as themselves, a class, or a literal character.
GlobPart = str | GlobClass


def glob_parts(glob: str) -> list[GlobPart] | None:
    """``glob`` read by SQLite's ``GLOB`` rules (``patternCompare`` in its func.c), or ``None`` where SQLite
    matches nothing: a ``[`` never closed. ``*`` any run of characters (``/`` and line breaks included), ``?`` one
    character, ``[...]`` one character of a class, anything else itself (``\\`` included: GLOB has no escape).

    In a class: a ``^`` first negates it; a ``]`` first (after the ``^``) is a member; ``a-z`` is a range
    by code point, and its first character a member even where the range is empty (``[z-a]`` holds ``z``); a
    ``-`` first, last or right after a range is itself; ``[:alpha:]`` is no POSIX class but its characters."""
    parts: list[GlobPart] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c != "[":
            parts.append(c)
            i += 1
            continue
        j = i + 1
        negated = glob.startswith("^", j)
        j += negated
        ranges: list[tuple[str, str]] = []
        if glob.startswith("]", j):
            ranges.append(("]", "]"))
            j += 1
        prior = None  # the member a "-" next makes the first of a range
        while j < n and glob[j] != "]":
            if glob[j] == "-" and prior is not None and j + 1 < n and glob[j + 1] != "]":
                ranges.append((prior, glob[j + 1]))
                prior, j = None, j + 2
            else:
                ranges.append((glob[j], glob[j]))
                prior, j = glob[j], j + 1
        if j >= n:
            return None
        parts.append(GlobClass(negated, tuple(ranges)))
        i = j + 1
    return parts


def glob_like(parts: list[GlobPart]) -> str:
    """A glob without a class as a PostgreSQL ``LIKE`` pattern (``\\`` its escape character)."""
    out = {"*": "%", "?": "_"}
    return "".join(out.get(p, _LIKE_SPECIAL.sub(r"\\\g<0>", p)) for p in parts if isinstance(p, str))


_LIKE_SPECIAL = re.compile(r"[%_\\]")


def glob_regex(parts: list[GlobPart]) -> str:
    """A glob as an anchored PostgreSQL regular expression (ARE) matching what SQLite's ``GLOB`` matches. Every
    character but an ASCII letter or digit is escaped, in a class too, so no glob character means anything else
    there (``[[:alpha:]]``, ``\\``, ``.``); an empty range (``z-a``) is left out, where PostgreSQL would refuse it."""
    out = ["^"]
    for part in parts:
        if isinstance(part, GlobClass):
            members = "".join(_re_char(a) if a == b else f"{_re_char(a)}-{_re_char(b)}"
                              for a, b in part.ranges if a <= b)
            out.append(f"[{'^' if part.negated else ''}{members}]")
        else:
            out.append({"*": ".*", "?": "."}.get(part) or _re_char(part))
    return "".join(out) + "$"


def _re_char(c: str) -> str:
    """``c`` as itself in a regular expression, in a class or out: ``\\`` before an ASCII character other than a
    letter or digit (an ARE reads ``\\`` and such a character as that character); other characters as they are."""
    return "\\" + c if c.isascii() and not c.isalnum() else c


def passages_sql(flt: Filter, dialect: str = "sqlite") -> Restrict:
    """A SELECT of the ids of the passages ``flt`` lets through, and its parameters."""
    cond, params = where(flt, dialect=dialect)
    return f"SELECT p.id FROM passages p JOIN documents d ON d.id = p.document_id WHERE {cond}", params
