"""Snippets through the edges: the CLI table (highlighted on a terminal only, never obeying the passage's own
escapes), ``--json`` and the HTTP API (document offsets)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchapp import Index, IndexConfig
from searchapp.analysis import TOKENIZER
from searchapp.cli import app, common
from searchapp.sqlite_driver import dbapi

runner = CliRunner()
FILLER = "Tomatoes want water twice a week in the summer months. " * 5
HOSTILE = "\x1b[2J\x1b]52;c;ZXZpbA==\x07"
ESC = re.compile("\x1b")


@pytest.fixture()
def location(tmp_path: Path, fake_encoder) -> Path:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keys.txt").write_text(FILLER + f"Rotate the signing keys {HOSTILE} with keyctl. " + FILLER)
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.ingest(docs)
    return tmp_path / "ix"


def test_json_snippet_is_the_window_around_the_match_in_document_offsets(location: Path, tmp_path: Path) -> None:
    res = runner.invoke(app, ["query", "signing keys", "--mode", "lexical", "-i", str(location), "--json"])
    assert res.exit_code == 0, res.output
    hit = json.loads(res.stdout)["hits"][0]
    doc = (tmp_path / "docs" / "keys.txt").read_text()
    sn = hit["snippet"]
    assert set(sn) == {"start", "end", "highlights"}
    assert "signing keys" in doc[sn["start"] : sn["end"]] and sn["start"] > 0
    assert [doc[s:e] for s, e in sn["highlights"]] == ["signing", "keys"]


def test_table_shows_the_match_plain_when_piped_and_bold_on_a_terminal_without_obeying_passage_escapes(
    location: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["query", "signing keys", "--mode", "lexical", "-i", str(location)]
    piped = runner.invoke(app, args)
    assert piped.exit_code == 0 and "signing keys" in piped.stdout
    assert not ESC.search(piped.stdout)  # no colour when not a terminal, and the passage's escapes shown
    assert piped.stdout.splitlines()[2].startswith("     ...")  # not the passage's start (below the header)

    monkeypatch.setattr(common, "color_stdout", lambda: True)
    tty = runner.invoke(app, args, color=True)
    assert "\x1b[1;33msigning\x1b[0m \x1b[1;33mkeys\x1b[0m" in tty.stdout
    # the only escape sequences are the highlight's own; the passage's are visible text
    assert set(re.findall("\x1b\\[[0-9;]*m", tty.stdout)) == {"\x1b[1;33m", "\x1b[0m"}
    assert len(ESC.findall(tty.stdout)) == 4 and "\\x1b]52;c;" in tty.stdout


def test_styled_escapes_marked_pieces_too() -> None:
    line = common.styled([("a\nb ", False), (f"key{HOSTILE}", True)], color=True)
    assert line == "a b \x1b[1;33mkey\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07\x1b[0m"
    assert common.styled([("key", True)], color=False) == "key"


def test_fts5_table_uses_the_declared_tokenizer(location: Path) -> None:
    with dbapi().connect(location / "index.db") as conn:
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'passages_fts'").fetchone()
    assert f"tokenize='{TOKENIZER}'" in sql


def test_http_hits_carry_the_snippet(location: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("fastapi")
    httpx = pytest.importorskip("httpx")
    from searchapp.server.app import create_app
    from tests.server_helpers import running

    with Index(location, encoder=fake_encoder) as ix, running(create_app(ix)) as url:
        body = httpx.post(f"{url}/search", json={"query": "signing keys", "mode": "lexical"}).json()
        expected = ix.search("signing keys", mode="lexical")[0].snippet
    assert expected is not None and body["hits"][0]["snippet"] == expected.to_dict()
