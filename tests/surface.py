"""The public surface in a comparable form: every CLI command's options (what ``--help`` renders) and the HTTP API's
OpenAPI schema. ``tests/integration/test_surface.py`` compares them with the snapshots in ``tests/snapshots/``; a
deliberate change of the surface is written there with ``python -m tests.surface --update`` and shows in review.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"


def _param(p: Any, ctx: Any) -> dict[str, Any]:
    """What ``--help`` shows of a parameter (its options, type, default, range and help), and how it parses."""
    shown = p.get_help_record(ctx) if p.param_type_name == "option" else None
    return {
        "kind": p.param_type_name, "opts": list(p.opts), "secondary": list(p.secondary_opts),
        "type": p.display_type(ctx), "help": list(shown) if shown else getattr(p, "help", None),
        "required": bool(p.required), "multiple": bool(p.multiple), "flag": bool(getattr(p, "is_flag", False)),
        "hidden": bool(getattr(p, "hidden", False)), "envvar": getattr(p, "envvar", None),
        "name": p.name if p.param_type_name == "argument" else None,
    }


def cli_surface() -> dict[str, Any]:
    """Every command of ``searchapp``: its help text and its parameters, as click holds them."""
    import typer.main

    from searchapp.cli import app, commands

    root = typer.main.get_command(app)
    out: dict[str, Any] = {}
    for name, cmd in {"": root, **dict(sorted(commands().items()))}.items():
        ctx = cmd.make_context(name or "searchapp", [], resilient_parsing=True)
        out[name] = {"help": cmd.help, "params": [_param(p, ctx) for p in cmd.params]}
    return out


def openapi_surface() -> dict[str, Any]:
    """The OpenAPI schema ``searchapp serve`` publishes at ``/openapi.json`` (version stripped)."""
    from fastapi import FastAPI

    from searchapp import Index, IndexConfig
    from searchapp.server.app import create_app
    from tests.conftest import FakeEncoder

    with tempfile.TemporaryDirectory() as tmp, Index(Path(tmp) / "ix", create=True, config=IndexConfig(),
                                                       encoder=FakeEncoder()) as index:
        app = create_app(index)
        while not isinstance(app, FastAPI):
            app = app.app  # type: ignore[attr-defined]
        schema = app.openapi()
    schema["info"].pop("version", None)
    return schema


def current() -> dict[str, Any]:
    return {"cli.json": cli_surface(), "openapi.json": openapi_surface()}


def main() -> None:
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python -m tests.surface --update   (writes tests/snapshots/)")
    SNAPSHOTS.mkdir(exist_ok=True)
    for name, value in current().items():
        (SNAPSHOTS / name).write_text(json.dumps(value, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
