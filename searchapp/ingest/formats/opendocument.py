"""OpenDocument text and presentations (ODT, ODP): paragraphs, headings by outline level, list items and table
cells in document order; each slide a group, its title frame a heading; footnotes and text boxes after the
paragraph that holds them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from searchapp.errors import LoadError
from searchapp.ingest.formats.blocks import BlockText
from searchapp.ingest.formats.format import Format, LoadedText
from searchapp.ingest.formats.zipped import DC_TITLE, Package, text_of

if TYPE_CHECKING:
    from lxml.etree import _Element

_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
_PRESENTATION = "{urn:oasis:names:tc:opendocument:xmlns:presentation:1.0}"
_SVG = "{urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0}"
_MANIFEST = "{urn:oasis:names:tc:opendocument:xmlns:manifest:1.0}"
# Not the document's text as a reader sees it: deleted text kept for change tracking, generated tables of
# contents and indexes (copies of the headings), comments, alternative text, declarations.
_SKIPPED = frozenset({
    f"{_TEXT}tracked-changes", f"{_TEXT}table-of-content", f"{_TEXT}alphabetical-index",
    f"{_TEXT}illustration-index", f"{_TEXT}table-index", f"{_TEXT}object-index", f"{_TEXT}user-index",
    f"{_TEXT}bibliography", f"{_TEXT}note-citation", f"{_TEXT}ruby-text", f"{_TEXT}sequence-decls",
    f"{_TEXT}variable-decls", f"{_TEXT}user-field-decls", f"{_OFFICE}annotation", f"{_OFFICE}annotation-end",
    f"{_OFFICE}forms", f"{_SVG}title", f"{_SVG}desc", f"{_DRAW}page-thumbnail",
})
_FURNITURE = frozenset({"page-number", "date-time", "footer", "header"})
# ODF collapses runs of these in paragraph text to one space (<text:s/>, <text:tab/> and <text:line-break/>
# stand for the ones meant); a no-break space is not among them.
_WHITESPACE = re.compile(r"[ \t\r\n]+")
# ODF's <text:s text:c="N"/> stands for N spaces: N is the file's to choose, the memory is ours. A run of spaces
# is cut at this many however many elements write it (5,000 of them, each with text:c="10000", are 100 spaces, not
# 50 million): no layout needs more, and spaces then outnumber a paragraph's other characters 100 to 1 at most.
_MAX_SPACE_RUN = 100


def _load_odf(path: Path, data: bytes) -> LoadedText:
    kind = path.suffix.lstrip(".").upper()
    package = Package(str(path), data, kind)
    manifest = package.xml("META-INF/manifest.xml")
    for entry in () if manifest is None else manifest.iterfind(f"{_MANIFEST}file-entry"):
        encrypted = entry.find(f"{_MANIFEST}encryption-data") is not None
        if encrypted and entry.get(f"{_MANIFEST}full-path") == "content.xml":
            raise LoadError(package.name, f"encrypted {kind} (password protected)")
    content = package.xml("content.xml", required=True)
    assert content is not None
    body = content.find(f"{_OFFICE}body")
    text = BlockText()
    if body is not None:
        _blocks(body, text)
    meta = package.xml("meta.xml")
    return text.loaded(text_of(None if meta is None else meta.find(f"{_OFFICE}meta/{DC_TITLE}")))


ODT = Format("ODT", (".odt",), _load_odf, is_text=False)
ODP = Format("ODP", (".odp",), _load_odf, is_text=False)


def _blocks(body: _Element, text: BlockText) -> None:
    """Adds the paragraphs, headings (``text:h`` by its outline level; a slide's title frame at level 1),
    list items and table cells under ``body`` to ``text`` in document order, each slide a group."""
    stack: list[_Element] = [body]
    while stack:
        node = stack.pop()
        tag = node.tag
        if tag in _SKIPPED or node.get(f"{_PRESENTATION}class") in _FURNITURE:
            continue
        if tag in (f"{_TEXT}p", f"{_TEXT}h"):
            line, nested = _inline(node)
            text.add(line, _level(node) if tag == f"{_TEXT}h" else None)
            stack.extend(reversed(nested))
        elif tag == f"{_DRAW}frame" and node.get(f"{_PRESENTATION}class") == "title":
            text.add(" ".join(_inline(p)[0] for p in node.iter(f"{_TEXT}p")), level=1)
        elif tag == f"{_DRAW}page":
            text.gap()
            # The title first, wherever its frame lies in the drawing order.
            children = sorted(node, key=lambda child: child.get(f"{_PRESENTATION}class") != "title")
            stack.extend(reversed(children))
        elif isinstance(tag, str):
            stack.extend(reversed(node))


def _level(heading: _Element) -> int:
    return _whole(heading.get(f"{_TEXT}outline-level"), default=1, most=6)


def _whole(value: str | None, default: int, most: int) -> int:
    """A count or level as the file writes it, at most ``most``; ``default`` when there is none or it is not
    ASCII digits ("²" is a digit to ``str.isdigit``, not to ``int``). Only as many digits are converted as can
    matter: ``int`` refuses a string of 4,300 digits, and the file chooses how many it writes."""
    if value is None or not (value.isascii() and value.isdigit()):
        return default
    digits = value.lstrip("0")
    return most if len(digits) > len(str(most)) else min(int(digits or "0"), most)


def _inline(paragraph: _Element) -> tuple[str, list[_Element]]:
    """A paragraph's own text, and the blocks nested in it (footnote bodies, text boxes, shapes) that are read
    after it as paragraphs of their own."""
    line = _Line()
    line.add(_WHITESPACE.sub(" ", paragraph.text or ""))
    nested: list[_Element] = []
    stack: list[_Element | str] = list(reversed(paragraph))
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            line.add(_WHITESPACE.sub(" ", node))
            continue
        if node.tail:
            stack.append(node.tail)
        tag = node.tag
        if tag == f"{_TEXT}s":
            line.spaces(_whole(node.get(f"{_TEXT}c"), default=1, most=_MAX_SPACE_RUN))
        elif tag == f"{_TEXT}tab":
            line.add("\t")
        elif tag == f"{_TEXT}line-break":
            line.add("\n")
        elif tag == f"{_TEXT}note-body" or (isinstance(tag, str) and tag.startswith(_DRAW)):
            nested.append(node)
        elif tag not in _SKIPPED:
            line.add(_WHITESPACE.sub(" ", node.text or ""))
            stack.extend(reversed(node))
    return "".join(line.pieces), nested


class _Line:
    """A paragraph's text as it is assembled, knowing how many spaces it ends in (``_MAX_SPACE_RUN``)."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self._trailing = 0

    def add(self, piece: str) -> None:
        kept = piece.rstrip(" ")
        self._trailing = self._trailing + len(piece) if not kept else len(piece) - len(kept)
        self.pieces.append(piece)

    def spaces(self, count: int) -> None:
        """``count`` spaces, fewer where the run they extend would pass ``_MAX_SPACE_RUN``."""
        self.add(" " * max(0, min(count, _MAX_SPACE_RUN - self._trailing)))
