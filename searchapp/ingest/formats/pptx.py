"""PowerPoint (PPTX): each slide's title, then its other shapes' paragraphs and tables in drawing order, then its
speaker notes; slides separated by a blank line, each title a heading."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from searchapp.errors import LoadError
from searchapp.ingest.formats.blocks import BlockText
from searchapp.ingest.formats.format import Format, LoadedText
from searchapp.ingest.formats.zipped import DC_TITLE, Package, text_of

if TYPE_CHECKING:
    from lxml.etree import _Element

_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_TITLES = frozenset({"title", "ctrTitle"})
# Slide furniture repeated on every slide (date, footer, slide number) and the notes page's slide picture.
_FURNITURE = frozenset({"dt", "ftr", "hdr", "sldNum", "sldImg"})


def _load_pptx(path: Path, data: bytes) -> LoadedText:
    package = Package(str(path), data, "PPTX")
    main = package.related("", "officeDocument")
    if main is None:
        raise LoadError(package.name, "not a valid PPTX file (no presentation part)")
    presentation = package.xml(main, required=True)
    assert presentation is not None
    slides = package.relationships(main)
    text = BlockText()
    # A slide (or notes page) is one part however often the list names it: read once, a part listed 20,000
    # times cannot make a 30 KB file load as a billion characters.
    read: set[str] = set()
    for slide_id in presentation.iterfind(f"{_P}sldIdLst/{_P}sldId"):
        rel = slides.get(slide_id.get(f"{_R}id", ""))
        if rel is None or rel[1] in read:
            continue
        read.add(rel[1])
        slide = package.xml(rel[1])
        if slide is None:
            continue
        text.gap()
        shapes = list(_shapes(slide))
        # The title first, wherever its shape lies in the drawing order.
        for shape, placeholder in shapes:
            if placeholder in _TITLES:
                text.add(" ".join(_paragraphs(shape)), level=1)
        for shape, placeholder in shapes:
            if placeholder not in _TITLES and placeholder not in _FURNITURE:
                for paragraph in _paragraphs(shape):
                    text.add(paragraph)
        notes_part = package.related(rel[1], "notesSlide")
        notes = None
        if notes_part is not None and notes_part not in read:
            read.add(notes_part)
            notes = package.xml(notes_part)
        for shape, placeholder in () if notes is None else _shapes(notes):
            if placeholder == "body":
                for paragraph in _paragraphs(shape):
                    text.add(paragraph)
    core = package.related("", "core-properties")
    properties = None if core is None else package.xml(core)
    return text.loaded(text_of(None if properties is None else properties.find(DC_TITLE)))


PPTX = Format("PPTX", (".pptx",), _load_pptx, is_text=False)


def _shapes(slide: _Element) -> Iterator[tuple[_Element, str | None]]:
    """The text-bearing shapes of a slide (or notes page) in drawing order, groups flattened, each with its
    placeholder type ("title", "body", ...; ``None`` for a shape that is no placeholder or has no type)."""
    tree = slide.find(f"{_P}cSld/{_P}spTree")
    stack = [] if tree is None else list(reversed(tree))
    while stack:
        shape = stack.pop()
        if shape.tag == f"{_P}grpSp":
            stack.extend(reversed(shape))
        elif shape.tag in (f"{_P}sp", f"{_P}graphicFrame"):
            placeholder = shape.find(f"./*/{_P}nvPr/{_P}ph")
            yield shape, None if placeholder is None else placeholder.get("type")


def _paragraphs(shape: _Element) -> Iterator[str]:
    """The paragraphs of a shape's text frame, or of a table's cells row by row (merged-over cells once)."""
    if shape.tag == f"{_P}sp":
        frames = shape.findall(f"{_P}txBody")
    else:
        frames = [cell.find(f"{_A}txBody") for cell in shape.iterfind(f".//{_A}tbl/{_A}tr/{_A}tc")
                  if cell.get("hMerge") != "1" and cell.get("vMerge") != "1"]
    for frame in frames:
        for paragraph in () if frame is None else frame.iterfind(f"{_A}p"):
            pieces = []
            for run in paragraph:
                if run.tag in (f"{_A}r", f"{_A}fld"):
                    pieces.append(run.findtext(f"{_A}t") or "")
                elif run.tag == f"{_A}br":
                    pieces.append("\n")
            yield "".join(pieces)
