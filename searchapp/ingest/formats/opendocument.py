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
# ODF's <text:s text:c="N"/> stands for N spaces: N is the file's to choose, the memory is ours.
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
    level = heading.get(f"{_TEXT}outline-level", "1")
    return int(level) if level.isdigit() else 1


def _inline(paragraph: _Element) -> tuple[str, list[_Element]]:
    """A paragraph's own text, and the blocks nested in it (footnote bodies, text boxes, shapes) that are read
    after it as paragraphs of their own."""
    pieces: list[str] = [_WHITESPACE.sub(" ", paragraph.text or "")]
    nested: list[_Element] = []
    stack: list[_Element | str] = list(reversed(paragraph))
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            pieces.append(_WHITESPACE.sub(" ", node))
            continue
        if node.tail:
            stack.append(node.tail)
        tag = node.tag
        if tag == f"{_TEXT}s":
            count = node.get(f"{_TEXT}c", "1")
            pieces.append(" " * min(int(count) if count.isdigit() else 1, _MAX_SPACE_RUN))
        elif tag == f"{_TEXT}tab":
            pieces.append("\t")
        elif tag == f"{_TEXT}line-break":
            pieces.append("\n")
        elif tag == f"{_TEXT}note-body" or (isinstance(tag, str) and tag.startswith(_DRAW)):
            nested.append(node)
        elif tag not in _SKIPPED:
            pieces.append(_WHITESPACE.sub(" ", node.text or ""))
            stack.extend(reversed(node))
    return "".join(pieces), nested
