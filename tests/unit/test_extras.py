"""One install hint per extra: named from pyproject.toml's extras, and right for how searchapp was installed (a
released wheel: the package name; an editable checkout: that checkout)."""

from __future__ import annotations

import ast
import json
import shlex
import sys
from importlib import metadata
from pathlib import Path

import pytest
import tomllib
from typer.testing import CliRunner

from searchapp import extras
from searchapp.cli import app

ROOT = Path(__file__).resolve().parents[2]


def declared_extras() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def test_every_hint_names_an_extra_that_pyproject_declares() -> None:
    named = []
    for path in (ROOT / "searchapp").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "missing"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                named.append((path.name, node.args[0].value))
    assert {"server", "mcp", "watch", "ray", "postgres"} <= {extra for _, extra in named}
    assert [(f, e) for f, e in named if e not in declared_extras()] == []


class FakeDistribution:
    def __init__(self, direct_url: dict[str, object] | None) -> None:
        self.direct_url = direct_url

    def read_text(self, name: str) -> str | None:
        return json.dumps(self.direct_url) if name == "direct_url.json" and self.direct_url is not None else None


@pytest.mark.parametrize(("direct_url", "expected"), [
    (None, "pip install 'searchapp[server]'"),  # from an index: pip writes no direct_url.json
    ({"url": "file:///tmp/dl/searchapp-0.1.0-py3-none-any.whl", "archive_info": {}}, "pip install 'searchapp[server]'"),
    ({"url": "file:///home/me/src/search%20app", "dir_info": {"editable": True}},
     "pip install -e '/home/me/src/search app[server]'"),
    ({"url": "file:///home/me/src/searchapp", "dir_info": {}}, "pip install 'searchapp[server]'"),  # not editable
])
def test_the_hint_fits_the_install(direct_url: dict[str, object] | None, expected: str,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata, "distribution", lambda name: FakeDistribution(direct_url))
    # Run by this interpreter: a bare `pip` is whichever comes first on the PATH.
    assert extras.install_command("server") == f"{shlex.quote(sys.executable)} -m {expected}"


def test_not_installed_at_all_gets_the_released_form(monkeypatch: pytest.MonkeyPatch) -> None:
    def absent(name: str) -> None:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", absent)
    assert extras.install_command("mcp") == f"{shlex.quote(sys.executable)} -m pip install 'searchapp[mcp]'"


def test_serve_without_its_extra_is_one_line_with_this_installs_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import uvicorn -> ImportError naming it
    res = CliRunner().invoke(app, ["serve", "--index", "ix"])
    assert res.exit_code == 2
    line = res.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.endswith(f"serve needs the server extra (uvicorn is missing): {extras.install_command('server')}")
