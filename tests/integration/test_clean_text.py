"""A passage's clean text on the command line: ``clean_text`` beside ``text`` in ``query --json`` (offsets those of
``text``), and ``query --text clean`` showing it in the table with the query's words still marked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchapp import Index, IndexConfig
from searchapp.cli import app, render
from tests.unit.test_clean import PAGE

runner = CliRunner()


@pytest.fixture()
def location(tmp_path: Path, fake_encoder) -> str:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "body.md").write_text(PAGE, encoding="utf-8")
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.ingest(docs)
    return str(tmp_path / "ix")


def test_json_gives_the_clean_text_beside_the_exact_one(location: str) -> None:
    out = runner.invoke(app, ["query", "pydantic model", "--mode", "lexical", "-i", location, "--json"])
    assert out.exit_code == 0, out.output
    hit = json.loads(out.stdout)["hits"][0]
    assert "  " in hit["text"] and "docs_src" in hit["text"] and hit["end"] - hit["start"] == len(hit["text"])
    assert hit["clean_text"] == ("Request bodies\n\nDeclare a request body with a Pydantic model.\n\n"
                                 "First item\nSecond item")


def test_the_table_shows_the_clean_text_on_asking(location: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def table(*form: str) -> str:
        out = runner.invoke(app, ["query", "pydantic model", "--mode", "lexical", "-i", location, *form])
        assert out.exit_code == 0, out.output
        return out.stdout.splitlines()[-1].strip()

    # The table's line already joins the blanks (cli/common.styled); the include directive is what stays.
    assert "docs_src" in table() and table() == table("--text", "exact")
    clean = table("--text", "clean")
    assert clean.startswith("Request bodies Declare a request body with a Pydantic model.") and "docs_src" not in clean
    # The query's words are marked in the clean text as in the exact one.
    monkeypatch.setattr(render, "say_styled", lambda pieces, indent=0: print([p for p, lit in pieces if lit]))
    assert table("--text", "clean") == table() == str(["Pydantic", "model"])
