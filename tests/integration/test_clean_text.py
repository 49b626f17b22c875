"""A passage's clean text on the command line: ``query --text clean`` giving it as ``--json``'s one ``text`` (the
exact one, which the offsets index, unless asked), and showing it in the table with the query's words still
marked."""

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


def test_json_gives_one_text_the_exact_unless_clean_is_asked(location: str) -> None:
    def hit(*form: str) -> dict[str, object]:
        out = runner.invoke(app, ["query", "pydantic model", "--mode", "lexical", "-i", location, "--json", *form])
        assert out.exit_code == 0, out.output
        return json.loads(out.stdout)["hits"][0]  # type: ignore[no-any-return]

    exact, clean = hit(), hit("--text", "clean")
    assert hit("--text", "exact") == exact and "clean_text" not in exact and "clean_text" not in clean
    assert exact["text_form"] == "exact" and clean["text_form"] == "clean"
    text = exact["text"]
    assert isinstance(text, str) and "  " in text and "docs_src" in text
    assert exact["end"] - exact["start"] == len(text)  # type: ignore[operator]
    assert clean["text"] == ("Request bodies\n\nDeclare a request body with a Pydantic model.\n\n"
                             "First item\nSecond item")
    assert {**clean, "text": text, "text_form": "exact"} == exact


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
