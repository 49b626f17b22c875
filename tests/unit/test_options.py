"""The search options are declared once (``query/options.py``): the engine's keywords and validation, the HTTP
API's request fields, the client's request body and the ``query`` command's options all come from it, so an
option declared there appears everywhere and no signature in the package lists them again."""

from __future__ import annotations

import ast
import typing
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main

from searchapp.errors import ConfigError
from searchapp.filters import Filter
from searchapp.query.fusion import Fusion
from searchapp.query.options import OPTIONS, FusionKwargs, flatten, nest, resolve
from searchapp.setting import Setting

PACKAGE = Path(__file__).resolve().parents[2] / "searchapp"


def _query_command() -> Any:
    from searchapp.cli import commands

    return commands()["query"]


def test_the_fusion_keywords_are_the_fusion_fields() -> None:
    typed = typing.get_type_hints(FusionKwargs)
    declared = typing.get_type_hints(Fusion)
    assert list(typed) == [f.name for f in fields(Fusion)]
    assert all(typed[name] == declared[name] | None for name in typed)


def test_the_engine_the_http_schema_the_client_and_the_cli_take_the_declared_options() -> None:
    names = list(OPTIONS)
    assert names == ["k", "mode", "filters", "explain", "min_score", "offset", "group_by"]
    asked, settings = resolve({"alpha": 0.3}, Fusion())
    assert list(asked) == names and settings.alpha == 0.3
    assert all(asked[n] == opt.default for n, opt in OPTIONS.items())
    body = nest({"k": 3, "alpha": 0.3})
    assert list(body) == [*names, "fusion"] and body["k"] == 3 and body["fusion"] == {"alpha": 0.3}
    request = {**body, "query": "q", "fusion": {"alpha": 0.3, "k0": None}}
    assert flatten(request) == {**{n: body[n] for n in names}, "alpha": 0.3}
    cli = {p.name: p for p in _query_command().params}
    for name, opt in OPTIONS.items():
        if name == "filters":  # the command's own --filter, --path-prefix, --path-glob
            continue
        assert cli[name].opts[0] == "--" + name.replace("_", "-") and cli[name].default == opt.default
        assert (cli[name].min, cli[name].max) == (opt.ge, opt.upper())
    pytest.importorskip("fastapi")
    from searchapp.server.schemas import SearchOptions

    # Then which text the hits carry (types.TextForm), no search option.
    assert list(SearchOptions.model_fields) == ["k", "mode", "filters", "fusion", *names[3:], "text"]
    assert all(SearchOptions.model_fields[n].default == opt.default for n, opt in OPTIONS.items())


def test_the_fusion_settings_are_declared_as_the_options_are() -> None:
    """One mechanism: each fusion setting is a Setting, from which the CLI's fusion options and the HTTP API's
    ``fusion`` object take their bounds (``k0`` its per-request bound too) and help."""
    from searchapp.query.fusion import SETTINGS
    from searchapp.setting import MAX_K

    assert list(SETTINGS) == [f.name for f in fields(Fusion)]
    assert all(isinstance(s, Setting) and s.default == getattr(Fusion(), n) for n, s in SETTINGS.items())
    cli = {p.name: p for p in _query_command().params}
    for name, s in SETTINGS.items():
        option = cli[f"fusion_{name}"]
        assert (option.min, option.max) == (s.ge, s.upper()) and option.help.startswith(s.text(s.help))
    pytest.importorskip("fastapi")
    from searchapp.server.schemas import FusionOverrides

    schema = FusionOverrides.model_json_schema()["properties"]
    assert schema["k0"]["anyOf"][0]["maximum"] == MAX_K == SETTINGS["k0"].request_upper()
    assert schema["method"]["description"] == "Hybrid fusion: " + ", ".join(SETTINGS["method"].names())


def test_a_new_option_appears_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    from searchapp.cli.options import search_options

    fresh = Setting(7, "A new option.", doc="A new option.", ge=1, per_request=9, name="fresh", kind=int)
    monkeypatch.setitem(OPTIONS, "fresh", fresh)
    assert resolve({}, Fusion())[0]["fresh"] == 7 and nest({})["fresh"] == 7
    with pytest.raises(ConfigError, match=r"fresh must be a whole number in \[1, 9223372036854775807\], got 0"):
        resolve({"fresh": 0}, Fusion())
    seen: dict[str, Any] = {}
    app = typer.Typer()
    app.command()(search_options(own={"filters": ()})(lambda *, options: seen.update(options)))
    from typer.testing import CliRunner

    assert CliRunner().invoke(app, ["--fresh", "3"]).exit_code == 0 and seen["fresh"] == 3
    pytest.importorskip("fastapi")
    from searchapp.server import schemas

    model = schemas._search_options()
    assert model(fresh=9).fresh == 9 and model().search_kwargs()["fresh"] == 7  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="less than or equal to 9"):
        model(fresh=10)


def test_bad_values_are_refused_with_one_message_each() -> None:
    for options, message in [
        ({"mode": "fuzzy"}, "unknown mode 'fuzzy': use one of hybrid, dense, lexical"),
        ({"group_by": "folder"}, "unknown group_by 'folder': use document"),
        ({"k": True}, r"k must be a whole number in \[1, 9223372036854775807\], got True"),
        ({"offset": -1}, r"offset must be a whole number in \[0, 9223372036854775807\], got -1"),
        ({"min_score": "0.5"}, r"min_score is a cosine, in \[-1, 1\]; got '0.5'"),
        ({"mode": "lexical", "min_score": 0.5}, "which lexical mode does not compute"),
        ({"filters": 3}, "filters must be an object"),
        ({"colour": "red"}, "unknown fusion setting colour"),
        ({"alpha": 2}, r"alpha must be a number in \[0, 1\], got 2"),
        ({"k0": 2.5}, r"k0 must be a whole number in \[1, 9223372036854775807\], got 2.5"),
        ({"rrf_k": True}, r"rrf_k must be a whole number in \[0, 9223372036854775807\], got True"),
        ({"lexical_spread": -1}, r"lexical_spread must be a number >= 0, got -1"),
        ({"method": "sum"}, "unknown fusion 'sum': use one of adaptive, convex, rrf"),
    ]:
        with pytest.raises(ConfigError, match=message):
            resolve(options, Fusion())
    assert isinstance(resolve({"filters": {"path_prefix": "a"}}, Fusion())[0]["filters"], Filter)


def test_no_signature_in_the_package_lists_the_options() -> None:
    """Index, QueryEngine, Client and the adapters take ``**options: Unpack[SearchKwargs]``."""
    listing = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args
                named = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
                if {"min_score", "group_by"} & named:
                    listing.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert listing == []
