"""The CLI's options and the HTTP API's schema are what the snapshots say: a refactor keeps the surface as it is
documented, and a deliberate change is made in ``tests/snapshots/`` too (``python -m tests.surface --update``)."""

from __future__ import annotations

import json

import pytest

from tests.surface import SNAPSHOTS, cli_surface, openapi_surface


def _snapshot(name: str) -> object:
    return json.loads((SNAPSHOTS / name).read_text(encoding="utf-8"))


def test_every_command_keeps_its_options() -> None:
    now, then = json.loads(json.dumps(cli_surface())), _snapshot("cli.json")
    assert sorted(now) == sorted(then)  # type: ignore[arg-type]
    for command in then:  # type: ignore[union-attr]
        assert now[command] == then[command], f"searchapp {command} --help changed"  # type: ignore[index]


def test_the_openapi_schema_is_unchanged() -> None:
    pytest.importorskip("fastapi")
    now, then = json.loads(json.dumps(openapi_surface())), _snapshot("openapi.json")
    assert sorted(now["paths"]) == sorted(then["paths"])  # type: ignore[index]
    for path in then["paths"]:  # type: ignore[index]
        assert now["paths"][path] == then["paths"][path], path
    assert now["components"] == then["components"]  # type: ignore[index]
    assert now == then
