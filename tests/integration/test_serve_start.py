"""`searchapp serve` loads the model before it serves (unless --lazy), and logs requests only when asked, without
query strings, keys or bodies."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from searchapp.cli import app
from searchapp.index import Index
from searchapp.server.app import create_app
from tests.server_helpers import free_port

runner = CliRunner()


@pytest.fixture()
def served(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`serve` runs up to uvicorn, which returns at once; what it was handed and whether the model was loaded."""
    import uvicorn

    seen: dict[str, Any] = {"warmed": 0}

    def run(self: Any, sockets: Any = None) -> None:
        seen["app"] = self.config.app

    def warm_up(self: Index) -> None:
        seen["warmed"] += 1

    monkeypatch.setattr(uvicorn.Server, "run", run)
    monkeypatch.setattr(Index, "warm_up", warm_up)
    return seen


def test_serve_loads_the_model_at_start_unless_lazy(small_index, served) -> None:  # type: ignore[no-untyped-def]
    location = str(small_index.location)
    small_index.close()
    out = runner.invoke(app, ["serve", "-i", location, "--port", str(free_port())])
    assert out.exit_code == 0, out.output
    assert served["warmed"] == 1 and "loading the model" in out.stderr
    lazy = runner.invoke(app, ["serve", "-i", location, "--port", str(free_port()), "--lazy"])
    assert lazy.exit_code == 0 and served["warmed"] == 1


def test_warm_up_loads_the_query_encoder(small_index, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    before = fake_encoder.embedded
    small_index.warm_up()
    assert fake_encoder.embedded == before + 1


def test_access_log_is_off_by_default_and_holds_no_key_query_or_body(small_index) -> None:  # type: ignore[no-untyped-def]
    stream = io.StringIO()
    with TestClient(create_app(small_index, api_key="s3cret-key", access_log=stream)) as client:
        headers = {"Authorization": "Bearer s3cret-key"}
        assert client.post("/search?trace=private-token", json={"query": "signing keys rotate"},
                           headers=headers).status_code == 200
        assert client.get("/status").status_code == 401
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r'\S+ "POST /search" 200 \d+ms', lines[0]), lines[0]
    assert re.fullmatch(r'\S+ "GET /status" 401 \d+ms', lines[1]), lines[1]
    for secret in ("s3cret-key", "private-token", "signing"):
        assert secret not in stream.getvalue()
    quiet = create_app(small_index)
    assert type(quiet).__name__ == "Guard"  # no access log unless asked


def test_cli_access_log_option_reaches_the_app(small_index, served) -> None:  # type: ignore[no-untyped-def]
    location = str(small_index.location)
    small_index.close()
    assert runner.invoke(app, ["serve", "-i", location, "--port", str(free_port()), "--lazy"]).exit_code == 0
    assert type(served["app"]).__name__ == "Guard"
    assert runner.invoke(app, ["serve", "-i", location, "--port", str(free_port()), "--lazy",
                               "--access-log"]).exit_code == 0
    assert type(served["app"]).__name__ == "AccessLog"
