"""Each hit's line and column (start and end), counted from the stored offsets and the whitespace the index
recorded, never from the file on disk; the document text rebuilt with the lines it had, on both backends."""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import update

from searchapp.ingest.formats.load import load_document

# A Markdown page: front matter and heading marks are blanked (whitespace between passages, newlines kept), a list,
# blank lines, an indented line and a tab inside a line.
PAGE = (
    "---\ntitle: Keys\nowner: ops\n---\n\n"
    "# Signing keys\n\n"
    "Rotate the signing keys every quarter with the rotate command. The old key stays valid for a week.\n\n\n"
    "  - Keys expire after a year.\n"
    "  - Expired keys are refused by every service.\n\n"
    "    Indented\tcode about keys stays as written.\n\n"
    "The database stores passages and vectors.  Backups run nightly and are kept for thirty days.\n"
)
WORDS = "keys rotate expire refused indented database backups"


def where(text: str, offset: int) -> tuple[int, int]:
    """``offset``'s line and column the plain way: split the text before it into lines."""
    lines = re.split(r"\r\n|\r|\n", text[:offset])
    return len(lines), len(lines[-1]) + 1


def check_lines(hits, text: str) -> None:  # type: ignore[no-untyped-def]
    assert hits
    for h in hits:
        assert (h.line, h.column) == where(text, h.start), h
        assert (h.end_line, h.end_column) == where(text, h.end), h


def stripped_lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n")]


def folder_with_page(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keys.md").write_text(PAGE, encoding="utf-8")
    return docs


def test_hits_carry_the_line_and_column_of_their_start_and_end(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    docs = folder_with_page(tmp_path)
    ix = index_at(max_tokens=24)
    ix.ingest(docs)
    hits = ix.search(WORDS, k=50, mode="lexical")
    assert len(hits) >= 4 and len({h.line for h in hits}) >= 4
    check_lines(hits, PAGE)
    # A text added through the API keeps its own line breaks: \r\n and \r are one break each, as \n is.
    text = "Notes\r\n\r\n   Rotate keys on Mondays.\rKeys expire in June.\n\n\tRefused keys are logged."
    ix.add_texts([text], ids=["notes"])
    check_lines(ix.search(WORDS, k=50, mode="lexical", filters={"path_prefix": "notes"}), text)
    grouped = ix.search(WORDS, k=5, group_by="document")  # every way of searching builds its hits in one place
    assert all(h.line is not None and h.end_column is not None for h in grouped)


def test_the_rebuilt_text_has_the_documents_lines_in_every_window(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    docs = folder_with_page(tmp_path)
    ix = index_at(max_tokens=24)
    ix.ingest(docs)
    path = str((docs / "keys.md").resolve())
    whole = ix.document(path).text
    # The whitespace between passages laid out again with its line breaks: the lines of the text the reader made of
    # the file (its markup blanked), each with the same words.
    assert len(whole) == len(PAGE) and whole.count("\n") == PAGE.count("\n")
    assert stripped_lines(whole) == stripped_lines(load_document(docs / "keys.md").text)
    # Windows that start and end inside the whitespace between passages agree with the whole.
    for size in (5, 7, 64):
        pieces = [ix.document(path, start=at, max_chars=size).text for at in range(0, len(PAGE), size)]
        assert "".join(pieces) == whole, size
    hit = next(h for h in ix.search("expired refused", k=5, mode="lexical") if "refused" in h.text)
    ctx = ix.context(hit.passage_id, chars=10_000)
    assert ctx.before + ctx.text + ctx.after == whole
    assert (ctx.line, ctx.column, ctx.end_line, ctx.end_column) == (hit.line, hit.column, hit.end_line,
                                                                    hit.end_column)
    one = ix.context(hit.passage_id, chars=10_000, lines=1)
    lines = whole.split("\n")
    assert one.before == "\n".join(lines[hit.line - 2 : hit.line - 1]) + "\n" + lines[hit.line - 1][: hit.column - 1]
    assert one.after == lines[hit.end_line - 1][hit.end_column - 1 :] + "\n" + lines[hit.end_line]
    assert ix.context(hit.passage_id, chars=3, lines=5).before == whole[hit.start - 3 : hit.start]  # within chars


def test_an_older_index_gets_its_lines_at_the_next_ingest_without_embedding_again(  # type: ignore[no-untyped-def]
    tmp_path: Path, index_at, fake_encoder
) -> None:
    docs = folder_with_page(tmp_path)
    ix = index_at(max_tokens=24)
    ix.ingest(docs)
    # As an index from before migration 0010 holds it: no positions, recorded by reader version 3.
    t = ix.stores.tables
    with ix.stores.engine.begin() as conn:
        conn.execute(update(t.passages).values(start_line=None, start_column=None))
        conn.execute(update(t.documents).values(passages_version=3))
    old = ix.search(WORDS, k=50, mode="lexical")
    assert {(h.line, h.column, h.end_line, h.end_column) for h in old} == {(None, None, None, None)}
    assert ix.document(str((docs / "keys.md").resolve())).text.count("\n") < PAGE.count("\n")  # as it was

    embedded = fake_encoder.embedded
    summary = ix.ingest(docs)
    assert (summary.unchanged, summary.passages_embedded, fake_encoder.embedded) == (1, 0, embedded)
    check_lines(ix.search(WORDS, k=50, mode="lexical"), PAGE)
