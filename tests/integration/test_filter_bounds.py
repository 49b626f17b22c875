"""Filters the stores cannot run are refused where a filter is built (``filters.Filter``), in one line naming the
field and the bound, on both backends (``index_at``); a filter within every bound runs on both, and a glob means
the same on both. The HTTP API, MCP and the CLI: tests/integration/test_server.py, test_mcp.py, test_cli_small.py."""

from __future__ import annotations

import re

import pytest

from searchapp.errors import ConfigError
from searchapp.setting import (
    MAX_FILTER_CHARS,
    MAX_FILTER_KEY_VALUES,
    MAX_FILTER_KEYS,
    MAX_FILTER_VALUES,
    MAX_GLOB_CHARS,
)
from searchapp.sqlite_driver import dbapi

# Before the bounds each of these was a traceback from the store (SQLite: "LIKE or GLOB pattern too complex",
# "Expression tree is too large", an OverflowError, a UnicodeEncodeError; HTTP 500, an MCP "internal error"),
# with the whole SQL and its parameters in the message: 190 KB for 5,000 keys.
REFUSED = [
    ({"path_glob": "*" + "a" * 50_000}, f"filters.path_glob is 50001 characters long, over the limit of "
     f"{MAX_GLOB_CHARS}"),
    ({"path_prefix": "a" * (MAX_FILTER_CHARS + 1)}, f"filters.path_prefix is {MAX_FILTER_CHARS + 1} characters "
     f"long, over the limit of {MAX_FILTER_CHARS}"),
    ({"metadata": {f"k{i}": 1 for i in range(5000)}}, f"filters.metadata has 5000 keys, over the limit of "
     f"{MAX_FILTER_KEYS}"),
    ({"metadata": {"team": list(range(100_000))}}, f"filter 'team' has 100000 values, over the limit of "
     f"{MAX_FILTER_KEY_VALUES} for one key"),
    ({"metadata": {f"k{i}": list(range(MAX_FILTER_KEY_VALUES)) for i in range(5)}},
     f"filters.metadata has {5 * MAX_FILTER_KEY_VALUES} values in all, over the limit of {MAX_FILTER_VALUES}"),
    ({"metadata": {"k" * (MAX_FILTER_CHARS + 1): 1}}, f"filter key '{'k' * 35}...' is {MAX_FILTER_CHARS + 1} "
     f"characters long, over the limit of {MAX_FILTER_CHARS}"),
    ({"metadata": {"team": ["a", "v" * (MAX_FILTER_CHARS + 1)]}}, f"filter 'team' value is "
     f"{MAX_FILTER_CHARS + 1} characters long, over the limit of {MAX_FILTER_CHARS}"),
    # A lone surrogate: what JSON's "\ud800" or an undecodable command-line byte gives; UTF-8 cannot carry it.
    ({"path_prefix": "docs/\ud800"}, "filters.path_prefix holds U+D800 at character 5, a lone surrogate"),
    ({"path_glob": "*\udcff"}, "filters.path_glob holds U+DCFF at character 1, a lone surrogate"),
    ({"metadata": {"team": ["a", "\udfff"]}}, "filter 'team' value holds U+DFFF at character 0, a lone surrogate"),
    ({"metadata": {"te\ud800am": "a"}}, "filter key 'te\\ud800am' holds U+D800 at character 2, a lone surrogate"),
    # Numbers no store compares: past 64 bits (SQLite cannot bind it), not finite (no stored value is).
    ({"metadata": {"n": 10**30}}, "filter 'n' must be a whole number in [-9223372036854775808, "
     f"9223372036854775807], got {10**30}"),
    ({"metadata": {"n": [1, -(2**63) - 1]}}, "filter 'n' must be a whole number in ["),
    ({"metadata": {"n": float("inf")}}, "filter 'n': inf is not a finite number"),
    ({"metadata": {"n": float("nan")}}, "filter 'n': nan is not a finite number"),
]


def test_a_filter_no_store_can_run_is_one_line_naming_the_field_and_the_bound(index_at) -> None:  # type: ignore[no-untyped-def]
    ix = index_at()
    ix.add_texts(["Signing keys expire after a year."], ids=["k1"], metadatas=[{"team": "a", "n": 1}])
    for filters, message in REFUSED:
        for mode in ("lexical", "dense", "hybrid"):
            with pytest.raises(ConfigError, match=f"^{re.escape(message)}") as refused:
                ix.search("signing keys", mode=mode, filters=filters)
            assert "\n" not in str(refused.value) and len(str(refused.value)) < 200


def test_a_query_that_is_not_unicode_text_is_one_line_naming_it(index_at) -> None:  # type: ignore[no-untyped-def]
    ix = index_at()
    ix.add_texts(["Signing keys expire after a year."], ids=["k1"])
    for mode in ("lexical", "dense"):
        with pytest.raises(ConfigError, match="^the query holds U\\+D800 at character 5, a lone surrogate"):
            ix.search("keys \ud800", mode=mode)
        with pytest.raises(ConfigError, match="^query 1 holds U\\+DC80 at character 1, a lone surrogate"):
            ix.search_batch(["keys", "k\udc80eys"], mode=mode)


def test_a_filter_at_every_bound_runs_on_both_backends(index_at) -> None:  # type: ignore[no-untyped-def]
    ix = index_at()
    long_id = "a" * MAX_FILTER_CHARS + "z"
    key, value = "k" * MAX_FILTER_CHARS, "v" * MAX_FILTER_CHARS
    meta = {**{f"k{i}": i for i in range(MAX_FILTER_KEYS - 1)}, key: value}
    ix.add_texts(["Signing keys expire after a year.", "Keys to the shed."], ids=[long_id, "other"],
                 metadatas=[meta, {"k0": -1}])
    per_key = MAX_FILTER_VALUES // MAX_FILTER_KEYS  # every key at once, as many values in all as allowed
    everywhere = {f"k{i}": [i + 1000 * j for j in range(per_key)] for i in range(MAX_FILTER_KEYS - 1)}
    everywhere[key] = [value] + [f"x{j}" for j in range(per_key - 1)]
    bounds = [
        {"metadata": everywhere},
        {"metadata": {"k5": [*range(10_000, 10_000 + MAX_FILTER_KEY_VALUES - 1), 5]}},
        {"path_prefix": "a" * MAX_FILTER_CHARS},
        {"path_glob": "a" * (MAX_GLOB_CHARS - 1) + "*"},  # a LIKE pattern on PostgreSQL
        {"path_glob": "[a]" * ((MAX_GLOB_CHARS - 1) // 3) + "*" + "?" * ((MAX_GLOB_CHARS - 1) % 3)},  # a regex
    ]
    for filters in bounds:
        assert sum(len(v) if isinstance(v, list) else 1 for v in filters.get("metadata", {}).values()) <= (
            MAX_FILTER_VALUES)
        for mode in ("lexical", "dense"):
            assert [h.path for h in ix.search("signing keys", mode=mode, filters=filters)] == [long_id], filters


# The globs reported (PostgreSQL refused the first two: a 268-line traceback, where the folder backend answered) and
# their neighbours: a class negated, one holding "]", a range's ends, an unclosed "[", a backslash, LIKE's "%".
GLOBS = ["*[z-a]*", "*[[:alpha:]]*", "*[^a-y]", "[]a]*", "*[a-]", "b[", "*\\*", "*%*", "?.md", "*[é-ü]*"]
IDS = ["z", "a]", "l]", "b]", "[x]", "x-", "ab", "b[", "c\\*", "50%", "x.md", "fü", "yy"]


def test_a_glob_finds_the_same_texts_on_both_backends(index_at) -> None:  # type: ignore[no-untyped-def]
    ix = index_at()
    ix.add_texts([f"Text number {n}." for n in range(len(IDS))], ids=IDS)
    for glob in GLOBS:
        with dbapi().connect(":memory:") as conn:  # what SQLite's GLOB, the folder backend's, matches
            expected = {i for i in IDS if conn.execute("SELECT ? GLOB ?", (i, glob)).fetchone()[0]}
        found = {h.path for h in ix.search("text number", k=len(IDS), mode="dense", filters={"path_glob": glob})}
        assert found == expected, glob
