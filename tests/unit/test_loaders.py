"""Tests for searchapp.ingest.formats: every format, the registry, the decoding rules and the error reasons."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import zipfile
from pathlib import Path

import docx
import pytest
from fpdf import FPDF
from pypdf import PdfReader, PdfWriter

from searchapp.errors import LoadError
from searchapp.ingest.formats import registry
from searchapp.ingest.formats.decoding import decode_text
from searchapp.ingest.formats.format import Format, LoadedText
from searchapp.ingest.formats.load import load_document
from searchapp.ingest.formats.registry import by_suffix, format_for, supported_suffixes
from searchapp.ingest.formats.text import MARKDOWN, TXT
from searchapp.types import Document, Heading
from tests.load_errors import reason

FRENCH = (
    "Le café était très chaud ce matin-là. Nous avons déjà mangé une crêpe à la crêperie près de la forêt.\n"
    "Le garçon a été très gentil, et la soirée s'est terminée par une promenade le long de la rivière.\n"
)


def write(path: Path, content: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def pdf_bytes(pages: list[str], title: str | None = None) -> bytes:
    pdf = FPDF()
    if title is not None:
        pdf.set_title(title)
    pdf.set_font("Helvetica", size=12)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 10, text)
    return bytes(pdf.output())


def encrypted_pdf_bytes(user_password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes(["Confidential budget figures"]))))
    writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


# --- registry -----------------------------------------------------------------------------------------------


def test_registry_covers_the_formats_and_ignores_case() -> None:
    prose = [".adoc", ".asciidoc", ".docx", ".epub", ".htm", ".html", ".markdown", ".md", ".odp", ".odt", ".pdf",
             ".pptx", ".rst", ".txt"]
    code = [".py", ".js", ".ts", ".go", ".rs", ".java", ".c", ".h", ".cpp", ".sh", ".toml", ".yaml", ".yml", ".json",
            ".ini", ".cfg"]
    suffixes = supported_suffixes()
    assert set(prose + code) <= set(suffixes) and suffixes[-5:] == sorted(registry.NAMES)
    assert {"Makefile", "Dockerfile"} <= set(registry.NAMES)
    assert format_for(Path("NOTES.MD")) is format_for(Path("notes.md")) is MARKDOWN
    assert format_for(Path("photo.jpg")) is None
    assert format_for(Path("README")) is None


def test_a_format_in_the_registry_is_what_loads_its_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def load_rst(path: Path, data: bytes) -> LoadedText:
        return LoadedText(data.decode().upper() + "\r\nend", "from loader")

    monkeypatch.setitem(registry.FORMATS, ".rst", Format("upper", (".rst",), load_rst, is_text=True))
    doc = load_document(write(tmp_path / "a.rst", "hello rst"))
    assert (doc.text, doc.title) == ("HELLO RST\nend", "from loader")  # line endings normalised whatever the loader


@pytest.mark.parametrize("suffixes", [("rst",), (".RST",), (".",), ()])
def test_a_format_s_suffixes_are_dotted_and_lower_case(suffixes: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="suffixes must look like"):
        Format("bad", suffixes, TXT.loader, is_text=True)


def test_two_formats_may_not_claim_one_suffix() -> None:
    with pytest.raises(ValueError, match=r"\.md is claimed by both Markdown and other"):
        by_suffix([MARKDOWN, Format("other", (".txt2", ".md"), TXT.loader, is_text=True)])


def test_importing_the_formats_does_not_import_parsers() -> None:
    code = (
        "import sys, searchapp.ingest.formats.load, searchapp.ingest.files\n"
        "heavy = {'pypdf', 'docx', 'bs4', 'charset_normalizer'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path.cwd())
    assert result.returncode == 0, result.stderr


# --- decoding -----------------------------------------------------------------------------------------------


def test_decode_text_strips_bom_and_normalises_line_endings() -> None:
    assert decode_text(b"\xef\xbb\xbfone\r\ntwo\rthree\n", "x") == "one\ntwo\nthree\n"


def test_decode_text_reads_utf16_with_bom() -> None:
    assert decode_text("naïve\r\ntext".encode("utf-16"), "x") == "naïve\ntext"


@pytest.mark.parametrize("encoding", ["cp1252", "latin-1"])
def test_legacy_encoded_txt_keeps_accents(tmp_path: Path, encoding: str) -> None:
    doc = load_document(write(tmp_path / "french.txt", FRENCH.encode(encoding)))
    for word in ("café", "très", "crêperie", "forêt", "garçon", "rivière"):
        assert word in doc.text
    assert doc.title == "french"


@pytest.mark.parametrize(
    "content",
    [
        b"plain text " * 100 + b"\x00",
        bytes(range(1, 8)) * 20 + b"some text",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    ],
)
def test_binary_content_is_rejected(tmp_path: Path, content: bytes) -> None:
    assert reason(write(tmp_path / "blob.txt", content)) == "binary content, not text"


def test_crlf_text_is_normalised(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path / "win.txt", b"alpha\r\nbeta\r\n\r\ngamma\rdelta"))
    assert doc.text == "alpha\nbeta\n\ngamma\ndelta"


# --- load_document ------------------------------------------------------------------------------------------


def test_document_fields(tmp_path: Path) -> None:
    data = b"Plain notes about the garden.\n"
    path = write(tmp_path / "sub" / "garden notes.txt", data)
    doc = load_document(tmp_path / "sub" / ".." / "sub" / "garden notes.txt")
    assert doc.path == str(path.resolve())
    assert doc.title == "garden notes"
    assert doc.text == "Plain notes about the garden.\n"
    assert doc.size == len(data)
    assert doc.sha256 == hashlib.sha256(data).hexdigest()
    assert doc.mtime == path.stat().st_mtime


def test_empty_whitespace_and_unsupported_files(tmp_path: Path) -> None:
    assert reason(write(tmp_path / "empty.txt", b"")) == "empty file"
    assert reason(write(tmp_path / "blank.md", b" \n\t\r\n")) == "no text"
    assert reason(write(tmp_path / "image.XYZ", b"data")) == "unsupported file type '.xyz'"
    assert reason(write(tmp_path / "LICENSE", b"all:")) == "unsupported file type (no suffix)"


def test_unreadable_and_missing_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert reason(tmp_path / "missing.txt").startswith("cannot read: No such file")
    path = write(tmp_path / "locked.txt", "secret")

    def deny(self: Path, *args: object, **kwargs: object) -> io.BufferedReader:
        raise PermissionError(13, "Permission denied", str(self))

    # chmod cannot lock out root, which the test may run as; the error raised by open() is what matters.
    monkeypatch.setattr(Path, "open", deny)
    assert reason(path) == "cannot read: Permission denied"


def test_directory_with_a_loader_suffix_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "folder.md").mkdir()
    assert reason(tmp_path / "folder.md") == "not a regular file"


# --- formats ------------------------------------------------------------------------------------------------


def test_markdown_markup_blanked_in_place_and_first_h1_title(tmp_path: Path) -> None:
    text = "Intro line\n\n```bash\n# not a heading\n```\n\n## Sub first\n\n# Real Title ##\n\nSome **b**.\n"
    doc = load_document(write(tmp_path / "doc.markdown", text))
    assert doc.text == "Intro line\n\n       \n# not a heading\n   \n\n   Sub first\n\n  Real Title   \n\nSome   b  .\n"
    assert doc.title == "Real Title"
    no_heading = load_document(write(tmp_path / "plain.md", "#hashtag is not a heading\n"))
    assert no_heading.title == "plain"


def test_html_visible_text_entities_and_title(tmp_path: Path) -> None:
    html = (
        "<!DOCTYPE html><html><head><title>Caf&eacute; &amp; Bar</title><style>p{color:red}</style>"
        "<script>var hidden = 'SCRIPTTEXT';</script></head><body><h1>Menu</h1>"
        "<p>Fish &amp; chips at the   <b>caf&eacute;</b>\n  today</p><div>Second block</div><!-- COMMENT -->"
        "<noscript>NOSCRIPTTEXT</noscript><template>TEMPLATETEXT</template><ul><li>one</li><li>two</li></ul>"
        "<p>line<br>break</p></body></html>"
    )
    doc = load_document(write(tmp_path / "page.html", html))
    assert doc.title == "Café & Bar"
    for hidden in ("SCRIPTTEXT", "color:red", "NOSCRIPTTEXT", "TEMPLATETEXT", "COMMENT", "Café & Bar"):
        assert hidden not in doc.text
    lines = doc.text.split("\n")
    assert "Fish & chips at the café today" in lines
    assert {"Menu", "Second block", "one", "two", "line", "break"} <= set(lines)
    assert "\n\n\n" not in doc.text
    assert doc.text == doc.text.strip()


def test_html_title_falls_back_to_h1(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path / "page.htm", "<body><h1>  First\n Heading </h1><p>Body</p></body>"))
    assert doc.title == "First Heading"
    assert doc.text == "First Heading\n\nBody"


def test_pdf_pages_and_metadata_title(tmp_path: Path) -> None:
    path = write(
        tmp_path / "report.pdf", pdf_bytes(["Quarterly revenue grew", "Second page summary"], "Q3 Report")
    )
    doc = load_document(path)
    assert doc.title == "Q3 Report"
    first, second = doc.text.split("\n\n")
    assert "Quarterly revenue grew" in first
    assert "Second page summary" in second


def test_pdf_without_title_uses_file_stem(tmp_path: Path) -> None:
    assert load_document(write(tmp_path / "untitled.pdf", pdf_bytes(["Some words"]))).title == "untitled"


def test_pdf_encrypted_with_empty_user_password_opens(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path / "restricted.pdf", encrypted_pdf_bytes("")))
    assert "Confidential budget figures" in doc.text


def test_pdf_with_password_is_rejected(tmp_path: Path) -> None:
    assert reason(write(tmp_path / "locked.pdf", encrypted_pdf_bytes("s3cret"))) == "encrypted PDF"


def test_pdf_with_blank_page_only_has_no_text_layer(tmp_path: Path) -> None:
    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    out = io.BytesIO()
    writer.write(out)
    assert reason(write(tmp_path / "scan.pdf", out.getvalue())) == "no text layer (scanned PDF?)"


def test_broken_pdf_gives_short_reason(tmp_path: Path) -> None:
    assert reason(write(tmp_path / "broken.pdf", b"%PDF-1.4 this is not really a pdf")).startswith(
        "broken PDF ("
    )


def test_docx_paragraphs_tables_and_heading_title(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Preface without style")
    document.add_heading("Project Plan", level=1)
    document.add_paragraph("Milestones are listed below.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Phase"
    table.cell(0, 1).text = "Owner"
    merged = table.cell(1, 0).merge(table.cell(1, 1))
    merged.text = "Merged cell text"
    document.add_paragraph("Closing remarks.")
    document.save(str(tmp_path / "plan.docx"))
    doc = load_document(tmp_path / "plan.docx")
    assert doc.title == "Project Plan"
    assert doc.text.split("\n") == [
        "Preface without style",
        "Project Plan",
        "Milestones are listed below.",
        "Phase",
        "Owner",
        "Merged cell text",
        "Closing remarks.",
    ]


def test_docx_title_from_core_properties_then_stem(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Only body text here.")
    document.save(str(tmp_path / "nostyle.docx"))
    assert load_document(tmp_path / "nostyle.docx").title == "nostyle"
    document.core_properties.title = "Core Title"
    document.save(str(tmp_path / "core.docx"))
    assert load_document(tmp_path / "core.docx").title == "Core Title"


def test_corrupt_docx(tmp_path: Path) -> None:
    assert reason(write(tmp_path / "junk.docx", bytes(range(256)) * 8)).startswith("not a valid DOCX file")
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("hello.txt", "not word")
    assert reason(write(tmp_path / "zip.docx", archive.getvalue())).startswith("not a valid DOCX file")


# --- headings -----------------------------------------------------------------------------------------------


def starts_a_line(doc: Document, heading: Heading) -> bool:
    return heading.start == 0 or doc.text[heading.start - 1] == "\n"


def test_markdown_headings_atx_and_setext_with_markup_stripped(tmp_path: Path) -> None:
    source = (
        "---\ntitle: Front\n---\n# The *Guide* {#guide}\n\nIntro [link](https://example.com).\n\n"
        "Setext Part\n-----------\n\n```md\n# not a heading\n```\n\n### `code` heading ###\n"
    )
    doc = load_document(write(tmp_path / "guide.md", source))
    # The front matter's title is the page's, before its first level-1 heading's (as sites show it).
    assert len(doc.text) == len(source) and doc.title == "Front"
    assert [(h.level, h.text) for h in doc.headings] == [(1, "The Guide"), (2, "Setext Part"), (3, "code heading")]
    assert all(starts_a_line(doc, h) for h in doc.headings)
    assert doc.text.split() == ["The", "Guide", "Intro", "link", ".", "Setext", "Part", "#", "not", "a", "heading",
                                "code", "heading"]


def test_rst_and_asciidoc_headings_and_titles(tmp_path: Path) -> None:
    rst = load_document(write(tmp_path / "a.rst", "=====\nTitle\n=====\n\nText :ref:`here <x>`.\n\nPart\n----\n"))
    assert rst.title == "Title" and [(h.level, h.text) for h in rst.headings] == [(1, "Title"), (2, "Part")]
    assert rst.text.split() == ["Title", "Text", "here", ".", "Part"]
    adoc = load_document(write(tmp_path / "b.adoc", "= Doc\n:toc:\n\n== Part\n\nSee link:u.html[the page].\n"))
    assert adoc.title == "Doc" and [(h.level, h.text) for h in adoc.headings] == [(1, "Doc"), (2, "Part")]
    assert adoc.text.split() == ["Doc", "Part", "See", "the", "page", "."]
    assert load_document(write(tmp_path / "c.asciidoc", "Just text.\n")).title == "c"
    for doc in (rst, adoc):
        assert all(starts_a_line(doc, h) for h in doc.headings)


def test_html_headings_land_where_their_text_does(tmp_path: Path) -> None:
    html = (
        "<html><head><title>Page</title></head><body><h1>  Main\n title </h1><p>Intro</p><h2>Sub <em>part</em></h2>"
        "<div><h3><div>Block</div> inside</h3></div><h4></h4><h5> </h5><pre>code</pre><h6>Last</h6></body></html>"
    )
    doc = load_document(write(tmp_path / "page.html", html))
    assert doc.title == "Page"
    assert doc.text == "Main title\n\nIntro\n\nSub part\n\nBlock\ninside\n\ncode\n\nLast"
    assert [(h.start, h.level, h.text) for h in doc.headings] == [
        (0, 1, "Main title"), (19, 2, "Sub part"), (29, 3, "Block inside"), (49, 6, "Last")]


NESTED_EMPTY = {
    "nested": "<h2>" * 50 + "</h2>" * 50,
    "nested-levels": "".join(f"<h{1 + i % 6}>" for i in range(50))
                     + "".join(f"</h{1 + i % 6}>" for i in range(49, -1, -1)),
    "blocks-in-a-heading": "<h1>" + "<div></div>" * 50 + "</h1>",
    "around-a-heading": "<h2>" * 25 + "<h3>Inner</h3>" + "</h2>" * 25,
}


@pytest.mark.parametrize("where", ["first", "between", "last"])
@pytest.mark.parametrize("kind", NESTED_EMPTY)
def test_html_empty_headings_leave_no_run_of_blank_lines(tmp_path: Path, kind: str, where: str) -> None:
    # The blank-line runs were collapsed while the heading marks were still in the text: a line holding only
    # marks was not blank yet, and 50 nested empty headings left 50 blank lines once the marks were out.
    parts = ["<h1>Top</h1>", "<p>after</p>"]
    parts.insert({"first": 0, "between": 1, "last": 2}[where], NESTED_EMPTY[kind])
    doc = load_document(write(tmp_path / "empty.html", f"<html><body>{''.join(parts)}</body></html>"))
    lines = ["Top", "after"]
    if kind == "around-a-heading":
        lines.insert({"first": 0, "between": 1, "last": 2}[where], "Inner")
    assert doc.text == "\n\n".join(lines)
    for heading in doc.headings:
        assert starts_a_line(doc, heading) and doc.text[heading.start:].startswith(heading.text)
    assert [h.text for h in doc.headings] == [line for line in doc.text.split("\n") if line in ("Top", "Inner")]


def test_docx_heading_styles_with_offsets(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Preface")
    document.add_heading("Doc Title", level=0)  # the Title style
    document.add_heading("Chapter", level=1)
    document.add_paragraph("Body text")
    document.add_heading("Deep", level=8)
    document.save(str(tmp_path / "book.docx"))
    doc = load_document(tmp_path / "book.docx")
    assert doc.title == "Doc Title"
    assert [(h.level, h.text) for h in doc.headings] == [(1, "Doc Title"), (1, "Chapter"), (6, "Deep")]
    assert all(doc.text[h.start :].startswith(h.text) for h in doc.headings)


def test_pdf_outline_entries_are_headings(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.start_section("Introduction")
    pdf.multi_cell(0, 10, "Introduction\nFirst page words")
    pdf.add_page()
    pdf.start_section("Details", level=1)
    pdf.multi_cell(0, 10, "Some lead text\nDetails\nSecond page")
    pdf.add_page()
    pdf.start_section("Appendix")
    pdf.multi_cell(0, 10, "Third page")
    doc = load_document(write(tmp_path / "outlined.pdf", bytes(pdf.output())))
    assert [(h.level, h.text) for h in doc.headings] == [(1, "Introduction"), (2, "Details"), (1, "Appendix")]
    details, appendix = doc.headings[1:]
    assert doc.text[details.start :].startswith("Details")  # its line on its page
    assert doc.text[appendix.start :].startswith("Third page")  # not in the text: its page's start
    assert load_document(write(tmp_path / "plain.pdf", pdf_bytes(["No outline"]))).headings == ()


def test_a_read_reserves_the_file_s_size_not_the_limit(tmp_path: Path) -> None:
    # Reading the limit's worth reserved it whole: under a memory cap (ulimit -v) an 18-byte file was "out of
    # memory"; a 1 TiB limit makes the reservation fail with any cap (hardening, round 3).
    (tmp_path / "small.txt").write_text("eighteen bytes ok.")
    assert load_document(tmp_path / "small.txt", max_bytes=2**40).text == "eighteen bytes ok."
    (tmp_path / "big.txt").write_text("x" * 100)
    with pytest.raises(LoadError, match="limit"):
        load_document(tmp_path / "big.txt", max_bytes=99)


@pytest.mark.parametrize(("suffix", "reader"), [(".md", "read_markdown"), (".rst", "read_rst"),
                                                 (".adoc", "read_asciidoc")])
def test_a_fault_in_a_markup_reader_is_that_files_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          suffix: str, reader: str) -> None:
    """A reader bug on some input (a bare last bullet once raised IndexError in the rST reader) costs that file,
    as a one-line LoadError naming it, not the ingest."""
    from searchapp.ingest import markup
    from searchapp.ingest.formats.load import load_document

    def broken(text: str) -> None:
        raise IndexError("string index out of range")

    monkeypatch.setattr(markup, reader, broken)
    path = tmp_path / f"doc{suffix}"
    path.write_text("Some text.\n")
    with pytest.raises(LoadError, match=r"cannot read this .*\(string index out of range\)"):
        load_document(path, 1 << 20, [])
