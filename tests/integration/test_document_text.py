"""A document's text and a passage's context, rebuilt from the stored passages (Index.document, Index.context), on
both backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchapp import DocumentNotFoundError, Index, IndexConfig
from searchapp.errors import ConfigError
from searchapp.store.rebuild import rebuild
from searchapp.store.rows import StoredPassage

# Paragraphs, a heading, a list and doubled spaces (a .txt file: read as written, markup and all): several
# passages at max_tokens=24, with gaps of one and of
# several whitespace characters between them.
TEXT = (
    "# Signing keys\n\n"
    "Rotate the signing keys every quarter with the rotate command. The old key stays valid for a week.\n\n"
    "  - Keys expire after a year.\n"
    "  - Expired keys are refused by every service.\n\n\n"
    "The database stores passages and vectors.  Backups run nightly and are kept for thirty days.\n"
)


def open_index(tmp_path: Path, encoder) -> Index:  # type: ignore[no-untyped-def]
    return Index(tmp_path / "ix", create=True, config=IndexConfig.from_flat(max_tokens=24), encoder=encoder)


def test_rebuild_fills_gaps_keeps_offsets_and_takes_overlaps_once() -> None:
    passages = [StoredPassage(1, 2, 6, "abcd"), StoredPassage(2, 4, 8, "cdef"), StoredPassage(3, 10, 12, "gh")]
    assert rebuild(passages, 0, 14) == " \nabcdef \ngh \n"
    assert rebuild(passages, 3, 11) == "bcdef \ng"
    assert rebuild(passages, 5, 5) == ""
    assert rebuild([], 0, 3) == "  \n"


def test_document_text_and_context_from_the_passages(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "keys.txt").write_text(TEXT, encoding="utf-8")
    ix = index_at(max_tokens=24)
    ix.ingest(folder)
    path = str((folder / "keys.txt").resolve())
    whole = ix.document(path)
    assert (whole.path, whole.source, whole.n_chars, whole.start, whole.end) == (path, "file", len(TEXT), 0, len(TEXT))
    assert not whole.truncated and len(whole.text) == len(TEXT) and len(whole.passages) >= 4
    # Every stored character is in place; only whitespace the splitter dropped differs.
    for got, want in zip(whole.text, TEXT, strict=True):
        assert got == want or (want.isspace() and got.isspace()), (got, want)
    assert whole.text.split() == TEXT.split()
    hits = ix.search("expired keys refused", k=20, mode="lexical")
    for hit in hits:
        assert whole.text[hit.start : hit.end] == hit.text

    window = ix.document(path, start=20, max_chars=50)
    assert (window.start, window.end, window.text, window.truncated) == (20, 70, whole.text[20:70], True)
    assert ix.document(path, start=len(TEXT) + 5).text == ""

    hit = next(h for h in hits if "refused" in h.text)
    ctx = ix.context(hit.passage_id, chars=40)
    assert (ctx.passage_id, ctx.path, ctx.start, ctx.end, ctx.text) == (hit.passage_id, path, hit.start, hit.end,
                                                                         hit.text)
    assert ctx.before == whole.text[max(0, hit.start - 40) : hit.start]
    assert ctx.after == whole.text[hit.end : hit.end + 40]
    assert len(ctx.before) == min(40, hit.start)
    first = ix.context(whole.passages[0][0], chars=10_000)
    assert first.before == whole.text[: first.start] and first.after == whole.text[first.end :]
    assert ix.context(hit.passage_id, chars=0).before == ""

    ix.add_texts(["A text added with an id."], ids=["notes#1"], metadatas=[{"team": "ops"}], titles=["Notes"])
    added = ix.document("notes#1")
    assert (added.text, added.title, added.source, added.metadata) == ("A text added with an id.", "Notes", "text",
                                                                       {"team": "ops"})

    with pytest.raises(DocumentNotFoundError, match="no document"):
        ix.document("/no/such/file.md")
    with pytest.raises(DocumentNotFoundError, match="no passage"):
        ix.context(10**9)
    with pytest.raises(ConfigError):
        ix.document(path, start=-1)
    with pytest.raises(ConfigError):
        ix.document(path, max_chars=0)
    with pytest.raises(ConfigError):
        ix.context(hit.passage_id, chars=-1)

