"""An ingest of a folder of PowerPoint, OpenDocument and EPUB files, good and hostile: the good ones are indexed
and searchable with their headings, each bad one is one warning line, and none stops the others."""

from __future__ import annotations

from pathlib import Path

from searchapp import Index, IndexConfig
from searchapp.ingest.formats import zipped
from tests.packages import BILLION_LAUGHS, ODP_BODY, ODT_BODY, epub_bytes, odf_bytes, padded, pptx_bytes


def test_good_and_bad_packages_in_one_ingest(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deck.pptx").write_bytes(pptx_bytes())
    (docs / "report.odt").write_bytes(odf_bytes("odt", ODT_BODY, title="ODT Title"))
    (docs / "talk.odp").write_bytes(odf_bytes("odp", ODP_BODY))
    (docs / "book.epub").write_bytes(epub_bytes())
    (docs / "corrupt.pptx").write_bytes(b"PK\x03\x04 not really a zip")
    (docs / "bomb.epub").write_bytes(padded(epub_bytes(), padding=zipped.MAX_ZIP_BYTES + 2**20))
    (docs / "laughs.odt").write_bytes(odf_bytes("odt", "<text:p>&lol9;</text:p>", prolog=BILLION_LAUGHS))
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        summary = ix.ingest(docs)
        assert (summary.added, summary.failed) == (4, 3)
        failures = dict(summary.failures)
        assert set(failures) == {str(docs / name) for name in ("corrupt.pptx", "bomb.epub", "laughs.odt")}
        assert all("\n" not in reason for reason in failures.values())
        assert "over the 64 MB allowed" in failures[str(docs / "bomb.epub")]
        for query, name in [("speaker notes", "deck.pptx"), ("footnote", "report.odt"), ("say hello", "talk.odp"),
                            ("dark night cold", "book.epub")]:
            hits = ix.search(query, k=1, mode="lexical")
            assert [Path(h.path).name for h in hits] == [name], query


def test_a_package_whose_text_outgrows_the_size_limit_is_skipped_as_too_large(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    # 1.4 KB on disk, 505,001 characters of text: more than a plain file of --max-file-mb 0.1 holds.
    (docs / "spaces.odt").write_bytes(odf_bytes("odt", "<text:p>" + 'a<text:s text:c="100"/>' * 5_000 + "z</text:p>"))
    (docs / "report.odt").write_bytes(odf_bytes("odt", ODT_BODY, title="ODT Title"))
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        summary = ix.ingest(docs, max_file_mb=0.1)
    assert (summary.added, summary.failed, summary.skipped["too_large"]) == (1, 1, 1)
    assert summary.failures == [(str(docs / "spaces.odt"), "its text is 505,001 characters, more than the 104,857 a "
                                 "plain text file of the size limit could hold (--max-file-mb)")]
