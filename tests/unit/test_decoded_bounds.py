"""What a file's text may grow to, by format: a part the file lists many times is read once (PPTX slides and notes,
EPUB spine items, PDF pages), counts the file writes are capped (ODF runs of spaces) or walked once (DOCX spanned
and merged cells), and every format's text is bounded by one rule: no more characters than a plain text file of
the size limit holds (``load.max_chars``), over it the file is skipped as too large with a one-line reason."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import docx
import pytest
from docx.oxml.ns import qn
from fpdf import FPDF
from pypdf import PdfReader, PdfWriter
from pypdf.generic import ArrayObject, NameObject, NumberObject

from searchapp.errors import LoadError
from searchapp.ingest.formats import registry
from searchapp.ingest.formats.format import Format, LoadedText
from searchapp.ingest.formats.load import load_document, max_chars
from tests.packages import epub_bytes, odf_bytes, parts_of, pptx_bytes, xhtml, zip_bytes

# Each file below loads in well under this on any machine once it is read as the fix reads it; before, the
# slowest took minutes (the PPTX 28 s, the PDF about 15 s, the DOCX of spanned cells did not end).
SECONDS = 10.0


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def loaded(path: Path, max_bytes: int | None = None) -> str:
    """``path``'s text, checking it loaded within :data:`SECONDS`."""
    started = time.perf_counter()
    doc = load_document(path) if max_bytes is None else load_document(path, max_bytes)
    assert time.perf_counter() - started < SECONDS
    return doc.text


def test_a_slide_listed_20000_times_is_read_once(tmp_path: Path) -> None:
    parts = parts_of(pptx_bytes())
    presentation = parts["ppt/presentation.xml"].decode()
    ids = re.findall(r'<p:sldId [^>]*r:id="(rId\d+)"/>', presentation)
    agenda = ids[1]  # the slide with a table and speaker notes
    # Half the entries name the slide's relationship again, half name 10,000 new relationships to the same part.
    rels = parts["ppt/_rels/presentation.xml.rels"].decode()
    target = re.search(rf'Id="{agenda}"[^>]*Target="([^"]+)"|Target="([^"]+)"[^>]*Id="{agenda}"', rels)
    assert target is not None
    slide = target.group(1) or target.group(2)
    new = "".join(f'<Relationship Id="rDup{i}" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                  f'relationships/slide" Target="{slide}"/>' for i in range(10_000))
    listed = "".join(f'<p:sldId id="{300 + i}" r:id="{agenda if i % 2 else f"rDup{i // 2}"}"/>'
                     for i in range(20_000))
    parts["ppt/_rels/presentation.xml.rels"] = rels.replace("</Relationships>", new + "</Relationships>").encode()
    parts["ppt/presentation.xml"] = re.sub(r"<p:sldIdLst>.*</p:sldIdLst>", f"<p:sldIdLst>{listed}</p:sldIdLst>",
                                           presentation).encode()
    text = loaded(write(tmp_path, "repeated.pptx", zip_bytes(dict(parts))))
    assert text == "Agenda\nFirst point\ncontinued\nSecond point\nPhase\nOwner\nMerged cell\nSpeaker notes here"


def test_a_chapter_the_spine_lists_20000_times_is_read_once(tmp_path: Path) -> None:
    parts = parts_of(epub_bytes(chapters={"one.xhtml": xhtml("<h1>Only Chapter</h1><p>Read once.</p>")}))
    opf = parts["OEBPS/content.opf"].decode()
    # The same item again and again, and other items spelling the same part's name otherwise.
    spellings = ["./one.xhtml", "one.xhtml#part", "%6Fne.xhtml", "sub/../one.xhtml"]
    items = "".join(f'<item id="alt{i}" href="{href}" media-type="application/xhtml+xml"/>'
                    for i, href in enumerate(spellings))
    spine = '<itemref idref="c0"/>' * 20_000 + "".join(f'<itemref idref="alt{i}"/>' for i in range(len(spellings)))
    opf = opf.replace("<manifest>", f"<manifest>{items}").replace('<itemref idref="c0"/>', spine)
    parts["OEBPS/content.opf"] = opf.encode()
    assert loaded(write(tmp_path, "repeated.epub", zip_bytes(dict(parts)))) == "Only Chapter\n\nRead once."


def test_a_pdf_page_the_page_tree_lists_2000_times_is_read_once(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 10, "Words on the only page. " * 20)
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(bytes(pdf.output()))))
    pages = writer._root_object["/Pages"].get_object()
    pages[NameObject("/Kids")] = ArrayObject([pages["/Kids"][0]] * 2_000)
    pages[NameObject("/Count")] = NumberObject(2_000)
    out = io.BytesIO()
    writer.write(out)
    text = loaded(write(tmp_path, "repeated.pdf", out.getvalue()))
    assert text.count("Words on the only page.") == 20


def test_an_odt_run_of_spaces_is_cut_however_many_elements_write_it(tmp_path: Path) -> None:
    spaces = '<text:s text:c="10000"/>' * 5_000
    body = f"<text:p>before{spaces}after</text:p><text:p>one<text:s/>two<text:s text:c='3'/>three</text:p>"
    text = loaded(write(tmp_path, "spaces.odt", odf_bytes("odt", body)))
    assert text == "before" + " " * 100 + "after\none two   three"


@pytest.mark.parametrize("value", ["²", "9" * 5_000, "-3", "1e9", "00000000000000000000000007"])
def test_an_odt_count_or_level_of_any_spelling_is_read_not_a_crash(tmp_path: Path, value: str) -> None:
    # "²" is a digit to str.isdigit but not to int(); 5,000 digits are past int()'s limit: both raised
    # ValueError out of the loader (a traceback ending the ingest).
    body = f'<text:h text:outline-level="{value}">Heading</text:h><text:p>a<text:s text:c="{value}"/>b</text:p>'
    doc = load_document(write(tmp_path, "counts.odt", odf_bytes("odt", body)))
    assert doc.text.startswith("Heading\na ") and doc.text.endswith("b")
    assert len(doc.text) <= len("Heading\na") + 100 + 1
    assert [h.text for h in doc.headings] == ["Heading"] and 1 <= doc.headings[0].level <= 6


def docx_table(rows: int, span: int) -> bytes:
    """A DOCX whose one table has ``rows`` rows, its first column one cell merged down all of them, and whose
    last cell spans ``span`` grid columns."""
    document = docx.Document()
    table = document.add_table(rows=rows, cols=2)
    for i, tr in enumerate(table._tbl.tr_lst):
        tr.tc_lst[0].vMerge = "restart" if i == 0 else "continue"
    table.cell(0, 0).text = "merged down"
    table.cell(rows - 1, 1).text = "last cell"
    last = table._tbl.tr_lst[-1].tc_lst[-1]
    last.grid_span = 2
    last.tcPr.gridSpan.set(qn("w:val"), str(span))  # past what python-docx's setter allows
    document.add_paragraph("after the table")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_docx_cells_spanned_and_merged_are_each_read_once(tmp_path: Path) -> None:
    # Before: python-docx's row.cells yields a cell once per grid column it spans (99,999,999,999 here) and
    # walks up the rows for each cell merged down (1,200 rows: recursion error after minutes).
    text = loaded(write(tmp_path, "table.docx", docx_table(rows=1_200, span=99_999_999_999)))
    assert text == "merged down\n" + "\n" * 1_199 + "last cell\nafter the table"


def test_docx_paragraph_styles_are_looked_up_once_per_style(tmp_path: Path) -> None:
    # python-docx finds a paragraph's style among all the document's styles each time: 8 ms a paragraph.
    document = docx.Document()
    document.add_heading("Heading", level=1)
    for _ in range(5_000):
        document.add_paragraph()
    document.add_paragraph("body words")
    out = io.BytesIO()
    document.save(out)
    started = time.perf_counter()
    doc = load_document(write(tmp_path, "many.docx", out.getvalue()))
    assert time.perf_counter() - started < 5.0  # was 40 s
    assert doc.text.startswith("Heading\n") and doc.text.endswith("body words")
    assert [(h.level, h.text) for h in doc.headings] == [(1, "Heading")]


def test_a_text_longer_than_the_size_limit_allows_is_skipped_as_too_large(tmp_path: Path) -> None:
    # Each "a" plus an element standing for 100 spaces: 101 characters for 24 bytes of XML, 1.4 KB zipped.
    path = write(tmp_path, "spaces.odt", odf_bytes("odt", "<text:p>" + 'a<text:s text:c="100"/>' * 5_000
                                               + "z</text:p>"))
    assert len(loaded(path)) == 505_001  # within the default limit
    with pytest.raises(LoadError) as info:
        load_document(path, max_bytes=100_000)
    assert info.value.skipped == "too_large" and info.value.path == str(path)
    assert info.value.reason == ("its text is 505,001 characters, more than the 100,000 a plain text file of the "
                                 "size limit could hold (--max-file-mb)")


def test_the_bound_holds_for_every_format_and_is_a_plain_file_s(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    assert max_chars(100_000) == 100_000  # a plain file's bytes each hold at most one character
    plain = write(tmp_path, "plain.txt", b"x" * 100_000)
    assert len(loaded(plain, max_bytes=100_000)) == 100_000

    def expands(path: Path, data: bytes) -> LoadedText:
        return LoadedText("y" * (100_000 + 1), None)

    monkeypatch.setitem(registry.FORMATS, ".rst", Format("expanding", (".rst",), expands, is_text=True))
    with pytest.raises(LoadError, match="its text is 100,001 characters, more than the 100,000") as info:
        load_document(write(tmp_path, "small.rst", b"tiny"), max_bytes=100_000)
    assert info.value.skipped == "too_large"
