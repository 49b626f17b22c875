"""Tests for the zip packages of XML (searchapp.ingest.formats: pptx, opendocument, epub, zipped): PPTX, ODT, ODP
and EPUB files built in the test are loaded with their text, title and headings; bombs, DTDs, corrupt and
encrypted files are refused with one-line reasons."""

from __future__ import annotations

import io
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import docx
import pytest

from searchapp.ingest.formats import zipped
from searchapp.ingest.formats.load import load_document
from tests.load_errors import reason
from tests.packages import (
    BILLION_LAUGHS,
    EXTERNAL_ENTITY,
    ODP_BODY,
    ODT_BODY,
    epub_bytes,
    odf_bytes,
    padded,
    parts_of,
    pptx_bytes,
    xhtml,
    zip_bytes,
)

GOOD = {
    "pptx": lambda: pptx_bytes(),
    "odt": lambda: odf_bytes("odt", ODT_BODY, title="ODT Title"),
    "odp": lambda: odf_bytes("odp", ODP_BODY),
    "epub": lambda: epub_bytes(),
}


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def headings(doc) -> list[tuple[int, str]]:  # type: ignore[no-untyped-def]
    for heading in doc.headings:
        assert doc.text[heading.start:].startswith(heading.text)
        assert heading.start == 0 or doc.text[heading.start - 1] == "\n"
    return [(h.level, h.text) for h in doc.headings]


def test_pptx_slides_in_order_title_first_tables_and_notes(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "deck.pptx", pptx_bytes()))
    assert doc.title == "Deck Title"
    assert doc.text == (
        "Opening\nA subtitle\nGrouped words\n\n"
        "Agenda\nFirst point\ncontinued\nSecond point\nPhase\nOwner\nMerged cell\nSpeaker notes here\n\n"
        "No title here"
    )
    assert headings(doc) == [(1, "Opening"), (1, "Agenda")]
    assert [h.start for h in doc.headings] == [0, doc.text.index("Agenda")]


def test_pptx_title_falls_back_to_the_first_slide_title(tmp_path: Path) -> None:
    assert load_document(write(tmp_path, "deck.pptx", pptx_bytes(core_title=None))).title == "Opening"


def test_odt_headings_lists_tables_notes_and_what_is_left_out(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "report.odt", odf_bytes("odt", ODT_BODY, title="ODT Title")))
    assert doc.title == "ODT Title"
    # Tracked deletions, the table of contents and comments are not the text a reader sees.
    assert doc.text == (
        "Introduction\nFirst paragraph with  spaces and more.\nA footnote.\nItem one\nItem two\n\n"
        "Details here\nCell A\nCell B\nLine\nbreak\n\nDeep"
    )
    assert headings(doc) == [(1, "Introduction"), (2, "Details here"), (6, "Deep")]  # outline level 8 -> 6


def test_odp_slides_title_frame_first_notes_and_no_furniture(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "talk.odp", odf_bytes("odp", ODP_BODY)))
    assert doc.text == "Welcome\nSub one\nSay hello\n\nPlan\nStep one\nT1"
    assert headings(doc) == [(1, "Welcome"), (1, "Plan")]
    assert doc.title == "Welcome"  # no title in meta.xml: the first heading


def test_epub_spine_order_headings_and_opf_title(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "book.epub", epub_bytes()))
    assert doc.title == "Book Title"
    assert doc.text == "Chapter One\n\nIt was a dark night & cold.\n\nPart A\n\nMore words.\n\nChapter Two\n\nThe end."
    for hidden in ("HIDDEN", "Running head", "margin", "NAV ENTRY"):
        assert hidden not in doc.text
    assert headings(doc) == [(1, "Chapter One"), (2, "Part A"), (1, "Chapter Two")]
    assert load_document(write(tmp_path, "untitled.epub", epub_bytes(title=None))).title == "Chapter One"


def test_importing_the_formats_does_not_import_lxml() -> None:
    code = "import sys, searchapp.ingest.formats.load\nassert 'lxml' not in sys.modules and 'bs4' not in sys.modules\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path.cwd())
    assert result.returncode == 0, result.stderr


# --- hostile packages ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", GOOD)
def test_a_package_declaring_too_much_is_refused_before_decompressing(tmp_path: Path, kind: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zipped, "MAX_ZIP_BYTES", 2**20)

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("a part was decompressed")

    bomb = write(tmp_path, f"bomb.{kind}", padded(GOOD[kind](), padding=2 * 2**20))
    assert bomb.stat().st_size < 2**20 // 4
    monkeypatch.setattr(zipfile.ZipFile, "open", never)
    assert reason(bomb) == "decompresses to 2 MB, over the 1 MB allowed"


@pytest.mark.parametrize("kind", GOOD)
def test_a_package_of_too_many_parts_is_refused(tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zipped, "MAX_ZIP_PARTS", 60)
    many = write(tmp_path, f"many.{kind}", padded(GOOD[kind](), extra_parts=61))
    assert reason(many).endswith(f"parts in the {kind.upper()}, over the 60 allowed")


def with_prolog(data: bytes, part: str, prolog: str, after: bytes = b"?>") -> bytes:
    """``data`` (a zip) with ``prolog`` inserted into ``part`` after its XML declaration."""
    parts: dict[str, str | bytes] = dict(parts_of(data))
    xml = parts[part]
    assert isinstance(xml, bytes)
    cut = xml.index(after) + len(after)
    parts[part] = xml[:cut] + prolog.encode() + xml[cut:]
    return zip_bytes(parts)


# Each with the DTD in its main XML part; ODF's also uses the entity (``ref``) in its text.
HOSTILE_XML = {
    "pptx": lambda prolog, ref: with_prolog(pptx_bytes(), "ppt/slides/slide1.xml", prolog),
    "odt": lambda prolog, ref: odf_bytes("odt", f"<text:p>{ref}</text:p>", prolog=prolog),
    "odp": lambda prolog, ref: odf_bytes("odp", f"<draw:page><draw:frame><draw:text-box><text:p>{ref}</text:p>"
                                                "</draw:text-box></draw:frame></draw:page>", prolog=prolog),
    "epub": lambda prolog, ref: epub_bytes(opf_prolog=prolog),
}


@pytest.mark.parametrize("kind", HOSTILE_XML)
@pytest.mark.parametrize(("prolog", "ref"), [(BILLION_LAUGHS, "&lol9;"), (EXTERNAL_ENTITY, "&secret;")],
                         ids=["billion-laughs", "external-entity"])
def test_an_xml_part_with_a_dtd_is_refused_without_expanding_it(tmp_path: Path, kind: str, prolog: str,
                                                                ref: str) -> None:
    path = write(tmp_path, f"entities.{kind}", HOSTILE_XML[kind](prolog, ref))
    started = time.perf_counter()
    text = reason(path)
    assert time.perf_counter() - started < 5
    assert "DTD" in text or "entity" in text, text
    assert "lollol" not in text and "root:" not in text


def test_an_epub_chapter_with_a_dtd_is_read_as_html_and_its_entities_never_expand(tmp_path: Path) -> None:
    chapter = xhtml("<h1>Safe</h1><p>before &lol9; after</p>", doctype=BILLION_LAUGHS)
    doc = load_document(write(tmp_path, "laughs.epub", epub_bytes(chapters={"a.xhtml": chapter})))
    assert "before" in doc.text and "after" in doc.text
    assert "lollol" not in doc.text and len(doc.text) < 1000
    assert headings(doc) == [(1, "Safe")]


def docx_bytes() -> bytes:
    document = docx.Document()
    document.add_paragraph("words")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


DEEP = "<x>" * 300 + "</x>" * 300
# Each format's main XML part with elements nested 300 deep, or a text of 11 M characters.
PAST_XML_LIMITS = {
    "pptx": lambda: with_prolog(pptx_bytes(), "ppt/slides/slide1.xml", DEEP, after=b"<a:t>"),
    "odt": lambda: odf_bytes("odt", f"<text:p>{DEEP}</text:p>"),
    "odp": lambda: odf_bytes("odp", f"<draw:page>{DEEP}</draw:page>"),
    "epub": lambda: with_prolog(epub_bytes(), "OEBPS/content.opf", DEEP, after=b"<manifest>"),
    "docx": lambda: with_prolog(docx_bytes(), "word/document.xml", DEEP, after=b"<w:body>"),
    "long-text-odt": lambda: odf_bytes("odt", "<text:p>" + "y" * 11_000_000 + "</text:p>"),
}


@pytest.mark.parametrize("kind", PAST_XML_LIMITS)
def test_xml_past_the_parser_s_limits_is_said_in_our_words(tmp_path: Path, kind: str) -> None:
    # libxml2 says "Excessive depth in document: 256, use XML_PARSE_HUGE option": an option the user cannot set.
    text = reason(write(tmp_path, f"deep.{kind.rsplit('-', 1)[-1]}", PAST_XML_LIMITS[kind]()))
    assert "XML_PARSE_HUGE" not in text and "huge" not in text.lower()
    if kind.startswith("long-text"):
        assert text == "not a valid ODT file: content.xml (a text or value over 10,000,000 characters long)"
    else:
        assert text.endswith("(nested more than 256 levels deep)"), text


@pytest.mark.parametrize("kind", GOOD)
def test_corrupt_packages_are_one_line_errors(tmp_path: Path, kind: str) -> None:
    name = kind.upper()
    assert reason(write(tmp_path, f"junk.{kind}", bytes(range(256)) * 8)).startswith(f"not a valid {name} file (")
    assert reason(write(tmp_path, f"other.{kind}", zip_bytes({"hello.txt": "not it"}))).startswith(
        f"not a valid {name} file (no "
    )
    good = GOOD[kind]()
    truncated = write(tmp_path, f"truncated.{kind}", good[: len(good) // 2])
    assert reason(truncated).startswith(f"not a valid {name} file")
    main = {"pptx": "ppt/presentation.xml", "odt": "content.xml", "odp": "content.xml",
            "epub": "OEBPS/content.opf"}[kind]
    broken = dict(parts_of(good))
    broken[main] = broken[main][: len(broken[main]) // 2]
    assert reason(write(tmp_path, f"broken.{kind}", zip_bytes(broken))).startswith(f"not a valid {name} file: {main} (")


def test_a_package_without_text_is_no_text(tmp_path: Path) -> None:
    assert reason(write(tmp_path, "empty.odt", odf_bytes("odt", "<text:p>  </text:p>"))) == "no text"


def test_encrypted_odf_and_drm_epub_are_named(tmp_path: Path) -> None:
    entry = ('<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml">'
             '<manifest:encryption-data manifest:checksum-type="SHA1/1K" manifest:checksum="x"/>'
             "</manifest:file-entry>")
    assert reason(write(tmp_path, "secret.odt", odf_bytes("odt", "<text:p>x</text:p>", manifest_entry=entry))) == (
        "encrypted ODT (password protected)"
    )
    encryption = ('<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container"'
                  ' xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
                  '<enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>'
                  '<enc:CipherData><enc:CipherReference URI="OEBPS/text/one.xhtml"/></enc:CipherData>'
                  "</enc:EncryptedData></encryption>")
    drm = write(tmp_path, "drm.epub", epub_bytes(extra={"META-INF/encryption.xml": encryption}))
    assert reason(drm) == "encrypted EPUB (DRM)"
    fonts = encryption.replace("http://www.w3.org/2001/04/xmlenc#aes128-cbc", "http://www.idpf.org/2008/embedding")
    assert "Chapter One" in load_document(write(tmp_path, "fonts.epub", epub_bytes(extra={
        "META-INF/encryption.xml": fonts}))).text
