"""Hardening, round 2, for files: decompression bombs, huge files, content that disappears, links that leave
the folder, and roots that move or are reached under another name."""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchapp import Index, IndexConfig, LoadError
from searchapp.cli import app
from searchapp.ingest.formats import registry, zipped
from searchapp.ingest.formats.load import load_document


def open_index(tmp_path: Path, encoder) -> Index:  # type: ignore[no-untyped-def]
    return Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=encoder)


def names(hits) -> set[str]:  # type: ignore[no-untyped-def]
    return {Path(h.path).name for h in hits}


def docx_bytes(text: str, padding: int = 0) -> bytes:
    """A real DOCX (python-docx), optionally with a part of ``padding`` zero bytes (it compresses to almost
    nothing: a small file that decompresses to a lot)."""
    import docx

    buf = io.BytesIO()
    document = docx.Document()
    document.add_paragraph(text)
    document.save(buf)
    if not padding:
        return buf.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            dst.writestr(item, src.read(item.filename))
        dst.writestr("word/media/padding.bin", b"\0" * padding)
    return out.getvalue()


def test_a_docx_that_decompresses_to_too_much_is_refused_before_parsing(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.docx"
    bomb.write_bytes(docx_bytes("harmless looking text", padding=zipped.MAX_ZIP_BYTES + 2**20))
    assert bomb.stat().st_size < 2**20  # under a megabyte on disk
    with pytest.raises(LoadError, match="decompresses to 6[56] MB, over the 64 MB allowed"):
        load_document(bomb)
    fine = tmp_path / "fine.docx"
    fine.write_bytes(docx_bytes("a normal document"))
    assert load_document(fine).text.strip() == "a normal document"


def test_a_large_file_is_skipped_before_it_is_read_and_the_rest_is_ingested(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "big.txt").write_text("word " * 600_000)  # 3 MB
    (docs / "small.txt").write_text("rotate the signing keys")
    with open_index(tmp_path, fake_encoder) as ix:
        summary = ix.ingest(docs, max_file_mb=1)
        assert summary.added == 1 and summary.failed == 1
        assert "over the 1 MB limit (--max-file-mb)" in summary.failures[0][1]
        with pytest.raises(Exception, match=r"max_file_mb must be a number of MB in \(0, "):
            ix.ingest(docs, max_file_mb=-1)


def test_running_out_of_memory_on_one_file_is_that_files_warning(tmp_path: Path, fake_encoder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nsome markdown text")
    (docs / "b.txt").write_text("plain text about keys")
    real = registry.FORMATS[".md"]

    def exhausted(path, data):  # type: ignore[no-untyped-def]
        raise MemoryError

    monkeypatch.setitem(registry.FORMATS, ".md", replace(real, loader=exhausted))
    with open_index(tmp_path, fake_encoder) as ix:
        summary = ix.ingest(docs)
    assert summary.added == 1 and summary.failures == [(str(docs / "a.md"), "out of memory parsing it")]
    assert real.loader is not exhausted


@pytest.mark.parametrize(("new_content", "reason"), [(b"", None), (b"   \n\n  ", None),
                                                      (b"\x00\x01\x02binary" * 100, "binary content")])
def test_a_file_emptied_or_blanked_or_turned_binary_loses_its_old_passages(  # type: ignore[no-untyped-def]
    tmp_path: Path, fake_encoder, new_content: bytes, reason: str | None
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "secret.txt").write_text("the launch code is zebra-42")
    (docs / "other.txt").write_text("an unrelated note")
    with open_index(tmp_path, fake_encoder) as ix:
        ix.ingest(docs)
        assert "secret.txt" in names(ix.search("launch code zebra", mode="lexical"))
        (docs / "secret.txt").write_bytes(new_content)
        summary = ix.ingest(docs)
        assert summary.removed == 1
        if reason is None:  # emptied or blanked: nothing to search, skipped as empty, no failure
            assert summary.failures == [] and summary.skipped["empty"] == 1
        else:
            assert summary.failures == [(str(docs / "secret.txt"), f"{reason}, not text (its indexed version was "
                                                                   "removed)")]
        for mode in ("lexical", "dense", "hybrid"):
            assert "secret.txt" not in names(ix.search("launch code zebra", mode=mode))
        assert ix.stats().documents == 1


def test_links_to_files_outside_the_folder_are_not_followed_unless_asked(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "passwd.txt").write_text("root:x:0:0:secret account")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "inside.txt").write_text("a note inside the folder")
    (docs / "passwd.txt").symlink_to(outside / "passwd.txt")
    (docs / "alias.txt").symlink_to(docs / "inside.txt")  # a link inside the folder is fine
    with open_index(tmp_path, fake_encoder) as ix:
        summary = ix.ingest(docs)
        assert summary.added == 2 and summary.failed == 1
        assert summary.failures[0][0].endswith("passwd.txt") and "outside the folder" in summary.failures[0][1]
        assert "passwd.txt" not in names(ix.search("root secret account", mode="lexical"))
        assert ix.ingest(docs, follow_links=True).added == 1


def test_a_folder_reached_through_a_link_is_the_same_folder(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("rotate the signing keys")
    (tmp_path / "alias").symlink_to(docs)
    with open_index(tmp_path, fake_encoder) as ix:
        assert ix.ingest(tmp_path / "alias").added == 1
        again = ix.ingest(docs)
        assert (again.added, again.unchanged, again.removed) == (0, 1, 0)
        assert ix.stats().documents == 1


def test_a_moved_root_is_removed_by_path_even_though_it_is_gone(tmp_path: Path, fake_encoder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    old = tmp_path / "old"
    old.mkdir()
    (old / "a.txt").write_text("rotate the signing keys")
    (old / "b.txt").write_text("water the tomatoes")
    with open_index(tmp_path, fake_encoder) as ix:
        ix.ingest(old)
        old.rename(tmp_path / "new")
        ix.ingest(tmp_path / "new")
        assert ix.stats().documents == 4  # the old copies stay until removed: the old root is gone, not empty
        ix.add_texts(["a kept text"], ids=["note-1"])
    runner = CliRunner()
    res = runner.invoke(app, ["ingest", "old", "--index", "ix"])
    assert res.exit_code == 2 and "searchapp remove old" in res.stderr
    res = runner.invoke(app, ["remove", "old", "--index", "ix", "--json"])
    assert res.exit_code == 0, res.output
    assert '"removed": 2' in res.stdout
    with Index(tmp_path / "ix", encoder=fake_encoder) as ix:
        assert ix.stats().documents == 3
        assert len(ix.remove_targets(["note-1"])) == 1
        assert all(Path(h.path).parent.name == "new" for h in ix.search("keys tomatoes", k=10, mode="lexical"))
    assert os.path.exists(tmp_path / "new" / "a.txt")


@pytest.mark.parametrize("where", ["under", "root"])
def test_the_index_s_own_files_are_not_counted_as_unsupported(tmp_path: Path, fake_encoder, where: str) -> None:  # type: ignore[no-untyped-def]
    # An index inside the folder it indexes showed as "skipped 4 of unsupported type": its database, vectors and
    # lock. They are not the user's files: not walked (under the folder), not counted (the folder itself).
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("# Notes\n\nrotate the signing keys")
    (docs / "pics").mkdir()
    (docs / "pics" / "photo.png").write_bytes(b"\x89PNG\r\n")  # the user's, and no format claims it: counted
    location = docs / "ix" if where == "under" else docs
    with Index(location, create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        first = ix.ingest(docs)
        again = ix.ingest(docs)
        assert names(ix.search("signing keys", k=5, mode="lexical")) == {"notes.md"}
    assert (first.added, again.unchanged) == (1, 1)
    assert first.skipped["unsupported"] == again.skipped["unsupported"] == 1
    assert first.skipped["hidden"] == again.skipped["hidden"] == 0
