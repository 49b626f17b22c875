"""A filter's conditions are declared once, as :class:`Filter`'s fields: its JSON form, the HTTP API's
``Filters``, the CLI's filter and each SQL dialect's compiler take theirs from them."""

from __future__ import annotations

import pytest

from searchapp.collection import MAX_NAME_CHARS
from searchapp.errors import ConfigError
from searchapp.filters import FIELDS, MAX_LENGTH, STRING_FIELDS, Filter
from searchapp.setting import MAX_FILTER_CHARS, MAX_FILTER_KEYS, MAX_GLOB_CHARS
from searchapp.store.filter_sql import _DIALECTS, where


def test_the_conditions_are_the_fields() -> None:
    assert FIELDS == ("metadata", "path_prefix", "path_glob", "collection")
    assert STRING_FIELDS == ("path_prefix", "path_glob", "collection")
    assert Filter.parse({"path_glob": "*.md"}) == Filter(path_glob="*.md")
    with pytest.raises(ConfigError, match="unknown filter colour: use metadata, path_prefix, path_glob, collection"):
        Filter.parse({"colour": "red"})
    for name in STRING_FIELDS:
        with pytest.raises(ConfigError, match=f"filters.{name} must be a string"):
            Filter.parse({name: 3})
        assert not Filter(**{name: ""}).empty  # "" is a condition (every path starts with it), not none
    assert Filter().empty and Filter.parse({"metadata": {}, "path_prefix": None}) == Filter()


@pytest.mark.parametrize("dialect", sorted(_DIALECTS))
def test_every_dialect_compiles_every_path_condition(dialect: str) -> None:
    for name in STRING_FIELDS:
        sql, params = where(Filter(**{name: "a*"}), dialect=dialect)
        assert params == {f"f_{name}": "a%" if (dialect, name) == ("postgresql", "path_glob") else "a*"}
        assert sql == _DIALECTS[dialect][name].format(docs="d", p=f"f_{name}", key="collection")
        # A NUL (which no stored path has) matches nothing and is never bound.
        assert where(Filter(**{name: "a\x00"}), dialect=dialect) == (_DIALECTS[dialect]["none"], {})


def test_the_http_form_has_the_fields() -> None:
    pytest.importorskip("fastapi")
    from searchapp.server.schemas import Filters

    assert tuple(Filters.model_fields) == FIELDS
    assert Filter.parse(Filters(path_prefix="a").model_dump()) == Filter(path_prefix="a")
    # Each condition's bound, declared with its field, is the HTTP schema's (MCP's tools show the same schema).
    schema = Filters.model_json_schema()["properties"]
    assert {name: schema[name].get("maxProperties") or schema[name]["anyOf"][0]["maxLength"] for name in FIELDS} == (
        MAX_LENGTH) == {"metadata": MAX_FILTER_KEYS, "path_prefix": MAX_FILTER_CHARS, "path_glob": MAX_GLOB_CHARS,
                           "collection": MAX_NAME_CHARS}


def test_the_cli_gives_a_filter_or_none(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from searchapp.cli.query_command import _filters

    assert _filters([], None, None) is None
    assert _filters(["team=a", "team=b"], str(tmp_path), "*.md") == Filter(
        {"team": ["a", "b"]}, path_prefix=str(tmp_path), path_glob="*.md")
