"""A corpus of odd and hostile files: each ends as a clean skip with a reason or a correct ingest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from searchapp import Index, IndexConfig


def build(root: Path) -> None:
    root.mkdir()
    (root / "zero.txt").write_bytes(b"")
    (root / "binary.txt").write_bytes(bytes(range(256)) * 64)
    (root / "bad-utf8.txt").write_bytes("Grüße aus Köln, ça va très bien.".encode("latin-1") + b"\xff\xfe ok")
    (root / "long-line.txt").write_text("x" * 2_000_000)  # one line, no spaces
    deep = root
    for i in range(30):
        deep = deep / f"level{i}"
    deep.mkdir(parents=True)
    (deep / "deep.md").write_text("# Deep\n\nFound at the bottom of thirty folders.\n")
    (root / "loop").mkdir()
    os.symlink(root, root / "loop" / "back", target_is_directory=True)
    (root / "script.html").write_text(
        "<html><head><title>T</title><script>alert('x')</script><style>p{}</style></head>"
        "<body><p>Caf&eacute; &amp; cr&egrave;me</p></body></html>"
    )
    (root / "name with spaces ünïcödé.txt").write_text("Unicode names are fine.\n")
    (root / "broken.docx").write_bytes(b"PK\x03\x04" + os.urandom(200))
    (root / "broken.pdf").write_bytes(b"%PDF-1.7\n" + os.urandom(300))


@pytest.mark.slow
def test_hostile_corpus_skips_cleanly_and_ingests_the_rest(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    build(tmp_path / "c")
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        summary = ix.ingest(tmp_path / "c")
        failed = {Path(p).name: r for p, r in summary.failures}
        assert set(failed) == {"zero.txt", "binary.txt", "broken.docx", "broken.pdf"}
        assert all(r and "\n" not in r for r in failed.values())
        assert summary.added == 5
        assert ix.search("thirty folders", k=1, mode="lexical")[0].title == "Deep"
        html = ix.search("crème café", k=1, mode="lexical")[0]
        assert "alert" not in html.text and "Café & crème" in html.text
        assert ix.search("Köln", k=1, mode="lexical")[0].path.endswith("bad-utf8.txt")
        assert ix.search("Unicode names", k=1, mode="lexical")[0].path.endswith("ünïcödé.txt")
        # The 2 MB line is cut into passages within the character cap, none lost.
        long = [r for r in ix.meta.hydrate(sorted(ix.meta.passage_documents())).values()
                if r.path.endswith("long-line.txt")]
        assert sum(r.end - r.start for r in long) == 2_000_000
        assert max(r.end - r.start for r in long) <= ix.config.max_chars
        again = ix.ingest(tmp_path / "c")
        assert (again.added, again.updated, again.passages_embedded) == (0, 0, 0)
