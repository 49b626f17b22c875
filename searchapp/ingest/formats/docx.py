"""Word documents (DOCX): body paragraphs in order, table cells flattened in place; heading styles as headings."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from searchapp.ingest.formats.decoding import normalise_newlines
from searchapp.ingest.formats.format import Format, LoadedText, clean_title
from searchapp.ingest.formats.parsers import parser_errors
from searchapp.ingest.formats.zipped import check_zip
from searchapp.types import Heading

if TYPE_CHECKING:
    from docx.document import Document as DocxDocument
    from docx.text.paragraph import Paragraph

_TITLE_STYLES = ("Heading", "Title")
_LEVEL = re.compile(r"Heading ([1-9])")


def _load_docx(path: Path, data: bytes) -> LoadedText:
    import docx

    name = str(path)
    check_zip(name, data, "DOCX")
    with parser_errors(name, "not a valid DOCX file"):
        document = docx.Document(io.BytesIO(data))
    with parser_errors(name, "cannot read DOCX"):
        styles: dict[str | None, str | None] = {}
        paragraphs = [(p.text, _style_name(p, styles)) for p in _paragraphs(document)]
        core_title = document.core_properties.title
    titles = (text for text, style in paragraphs if text.strip() and (style or "").startswith(_TITLE_STYLES))
    headings: list[Heading] = []
    start = 0
    for paragraph, style in paragraphs:
        level = _level(style)
        words = " ".join(paragraph.split())
        if level and words:
            headings.append(Heading(start, level, words))
        # The paragraph with its separator: normalising it alone gives its length in the joined text.
        start += len(normalise_newlines(paragraph + "\n"))
    text = "\n".join(text for text, _ in paragraphs)
    return LoadedText(normalise_newlines(text), clean_title(next(titles, core_title)), tuple(headings))


DOCX = Format("DOCX", (".docx",), _load_docx, is_text=False, loggers=("docx",))


def _style_name(paragraph: Paragraph, names: dict[str | None, str | None]) -> str | None:
    """The name of ``paragraph``'s style, looked up once per style id in ``names``: python-docx looks a
    paragraph's style up among all the document's styles each time (8 ms a paragraph: a 37 KB file of 10,000
    empty paragraphs took 80 s)."""
    style_id = paragraph._p.style
    if style_id not in names:
        style = paragraph.style
        names[style_id] = style.name if style else None
    return names[style_id]


def _level(style: str | None) -> int:
    """A paragraph style's heading level: ``Heading n`` is n (at most 6), ``Title`` 1, any other style 0."""
    if style == "Title":
        return 1
    level = _LEVEL.fullmatch(style or "")
    return min(int(level.group(1)), 6) if level else 0


def _paragraphs(document: DocxDocument) -> Iterator[Paragraph]:
    """Body paragraphs in document order, with table cells (nested tables too) flattened in place."""
    from docx.table import Table, _Cell

    stack: list[Paragraph | Table] = list(reversed(list(document.iter_inner_content())))
    while stack:
        item = stack.pop()
        if isinstance(item, Table):
            inner: list[Paragraph | Table] = []
            # Each cell as the file holds it, once: python-docx's row.cells repeats a cell once per grid column
            # it spans (w:gridSpan="99999999999" in a 1 KB file never ends) and finds a vertically merged cell's
            # content by walking up the rows (quadratic, and recursion-bound). A cell continuing a vertical merge
            # (w:vMerge without "restart") holds none of its own: Word keeps it in the merge's first cell.
            for tr in item._tbl.tr_lst:
                for tc in tr.tc_lst:
                    if tc.vMerge != "continue":
                        inner.extend(_Cell(tc, item).iter_inner_content())
            stack.extend(reversed(inner))
        else:
            yield item
