"""Words inside Chinese, Japanese and Thai text (scripts written without spaces) are found by the lexical index, on
both backends, through the library and the CLI (docs/cli.md, "Languages"); the stored text and offsets are the
document's; an index made before migration 0011 is indexed again by it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from typer.testing import CliRunner

from searchapp import Index
from searchapp.analysis import fts5_terms, lexical_fields
from searchapp.cli import app
from searchapp.store import lexical_index, schema

runner = CliRunner()

# Each document, and a word found only inside one of its runs of text (never standing alone).
DOCS = {
    "zh.txt": ("我们的研究团队在北京大学开发了新的搜索引擎。", "搜索"),  # "search" in "... new search engine"
    "ja.txt": ("東京都の図書館で日本語の本を借りました。", "図書館"),  # "library": "... borrowed a book at the library"
    # "Thai language" in "I study the Thai language at a school near home": a word without a combining mark, which
    # unicode61 alone left inside a longer fragment (it cuts Thai at its marks).
    "th.txt": ("ฉันเรียนภาษาไทยที่โรงเรียนใกล้บ้าน", "ภาษาไทย"),
    "en.txt": ("Rotate the signing keys every quarter with the rotate command.", "keys"),
}


def write_docs(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir()
    for name, (body, _) in DOCS.items():
        (docs / name).write_text(body + "\n", encoding="utf-8")
    return docs


def found(hits: list, name: str, word: str) -> None:  # type: ignore[type-arg]
    """The document ``name`` ranks first for ``word``, its stored text and offsets the document's."""
    assert hits, f"{word!r} found nothing"
    top = hits[0]
    path, text, start, end = ((top["path"], top["text"], top["start"], top["end"]) if isinstance(top, dict)
                              else (top.path, top.text, top.start, top.end))
    assert Path(path).name == name
    body = DOCS[name][0] + "\n"
    assert text == body[start:end] and word in text


@pytest.mark.parametrize("name", sorted(DOCS))
def test_a_word_inside_a_run_is_found_on_both_backends(tmp_path: Path, index_at, name: str) -> None:  # type: ignore[no-untyped-def]
    ix = index_at()
    ix.ingest(write_docs(tmp_path))
    word = DOCS[name][1]
    found(ix.search(word, k=5, mode="lexical"), name, word)
    # Its only match: no other document shares a unit with it.
    assert len(ix.search(word, k=5, mode="lexical")) == 1


def test_the_cli_finds_a_word_inside_a_run(tmp_path: Path, fake_model) -> None:  # type: ignore[no-untyped-def]
    docs = write_docs(tmp_path)
    location = str(tmp_path / "ix")
    assert runner.invoke(app, ["ingest", str(docs), "-i", location]).exit_code == 0
    for name, (_, word) in DOCS.items():
        out = runner.invoke(app, ["query", word, "--mode", "lexical", "-k", "3", "-i", location, "--json"])
        assert out.exit_code == 0, out.output
        found(json.loads(out.stdout)["hits"], name, word)


def fts5_rows(conn: sa.Connection) -> list[tuple[int, str, str]]:
    """What the FTS5 table holds, as (rowid, column, term), sorted."""
    conn.execute(sa.text("CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_terms USING fts5vocab(main, passages_fts, "
                         "'instance')"))
    return sorted(conn.execute(sa.text("SELECT doc, col, term FROM temp.fts_terms")).all())


def package_rows(conn: sa.Connection) -> list[tuple[int, str, str]]:
    """What the package indexes of the stored passages, as (rowid, column, term), sorted."""
    rows = conn.execute(sa.text("SELECT id, text, section FROM passages")).all()
    out = []
    for column, values in (("text", [r[1] for r in rows]), ("section", [r[2] for r in rows])):
        for r, terms in zip(rows, fts5_terms(values), strict=True):
            out.extend((r[0], column, term) for term in terms.split())
    return sorted(out)


def test_an_index_from_before_migration_0011_is_indexed_again(tmp_path: Path, index_at, backend: str,
                                                              fake_encoder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Taken back to 0010 (runs indexed whole) and opened again: 0011 indexes the runs' passages again, and the
    index holds exactly what the package indexes (FTS5's terms; PostgreSQL's fields); the words are found."""
    monkeypatch.setattr(lexical_index, "DEFAULT", "fts5")  # the indexes 0010 knew were FTS5's
    ix = index_at()
    ix.ingest(write_docs(tmp_path))
    pg = backend == "postgresql"
    engine = ix.stores.write_engine if pg else ix.stores.engine
    with engine.begin() as conn:
        command.downgrade(schema._alembic_config(conn, ix.stores.schema if pg else None), "0010")
        # The runs as 0010 indexed them: whole.
        if pg:
            old = conn.execute(sa.text("SELECT lexical_text FROM passages_lexical")).scalars().all()
            assert any(DOCS["zh.txt"][0][:-1] in field.split() for field in old)
        else:
            old = fts5_rows(conn)
            assert old != package_rows(conn)
            assert any(term == DOCS["zh.txt"][0][:-1] for _, _, term in old)
    ix.close()
    with Index.open_or_create(ix.location, encoder=fake_encoder) as again:
        with (again.stores.write_engine if pg else again.stores.engine).begin() as conn:
            if pg:
                rows = conn.execute(sa.text("SELECT p.text, p.section, l.lexical_text FROM passages p "
                                            "JOIN passages_lexical l ON l.id = p.id ORDER BY p.id")).all()
                assert [r[2] for r in rows] == lexical_fields([r[0] for r in rows], [r[1] for r in rows])
            else:
                assert fts5_rows(conn) == package_rows(conn)
        for name, (_, word) in DOCS.items():
            found(again.search(word, k=5, mode="lexical"), name, word)
