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
        paragraphs = [(p.text, p.style.name if p.style else None) for p in _paragraphs(document)]
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


def _level(style: str | None) -> int:
    """A paragraph style's heading level: ``Heading n`` is n (at most 6), ``Title`` 1, any other style 0."""
    if style == "Title":
        return 1
    level = _LEVEL.fullmatch(style or "")
    return min(int(level.group(1)), 6) if level else 0


def _paragraphs(document: DocxDocument) -> Iterator[Paragraph]:
    """Body paragraphs in document order, with table cells (nested tables too) flattened in place."""
    from docx.table import Table

    stack: list[Paragraph | Table] = list(reversed(list(document.iter_inner_content())))
    while stack:
        item = stack.pop()
        if isinstance(item, Table):
            inner: list[Paragraph | Table] = []
            # A merged cell is returned once per grid column it spans; its text must appear once.
            seen: set[object] = set()
            for row in item.rows:
                for cell in row.cells:
                    if cell._tc not in seen:
                        seen.add(cell._tc)
                        inner.extend(cell.iter_inner_content())
            stack.extend(reversed(inner))
        else:
            yield item
