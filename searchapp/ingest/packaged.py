"""Loaders for the formats that are zip packages of XML: PowerPoint (``.pptx``), OpenDocument text and
presentations (``.odt``, ``.odp``) and EPUB (``.epub``). DOCX, the first of them, lives in loaders.py.

Each package is checked by its declared sizes before anything is decompressed (``loaders._check_zip``: the
limits every zip-packaged format shares). Its XML parts are parsed by lxml (already python-docx's parser) with
entities never resolved, no DTD or network access, libxml2's default depth and size limits, and any part that
declares a DTD is refused: entity expansion cannot make a small part large. EPUB chapters are HTML, read as
loaders.py reads HTML. Parsers are imported inside the functions that use them, as in loaders.py.

The text of each format is its paragraphs one a line, headings (with a blank line before them) and slides or
chapters separated by a blank line; each heading's offset is where its line starts in that text.
"""

from __future__ import annotations

import io
import posixpath
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING
from urllib.parse import unquote

from searchapp.errors import LoadError
from searchapp.ingest.loaders import (
    _HIDDEN_HTML_TAGS,
    _SPACES,
    MAX_HTML_CHARS,
    LoadedText,
    _check_zip,
    _clean_title,
    _html_visible_text,
    _normalise_newlines,
    _parser_errors,
    decode_text,
    register,
)
from searchapp.types import Heading

if TYPE_CHECKING:
    from pathlib import Path
    from zipfile import ZipFile

    from lxml.etree import _Element

# ODF collapses runs of these in paragraph text to one space (<text:s/>, <text:tab/> and <text:line-break/>
# stand for the ones meant); a no-break space is not among them.
_ODF_WHITESPACE = re.compile(r"[ \t\r\n]+")
# ODF's <text:s text:c="N"/> stands for N spaces: N is the file's to choose, the memory is ours.
_MAX_SPACE_RUN = 100


class _Text:
    """The loaded text as it is built: blocks one a line, a blank line before each heading and between groups
    (slides, chapters), and the headings' offsets into it."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self._gap = False
        self.headings: list[Heading] = []

    def gap(self) -> None:
        """The next block starts a new group: a blank line before it."""
        self._gap = True

    def add(self, block: str, level: int | None = None) -> None:
        """One paragraph (line breaks kept), or a heading of ``level`` (its whitespace collapsed to one line)."""
        if level is None:
            self.add_text(block.strip())
        else:
            line = _SPACES.sub(" ", block).strip()
            if line:
                self.gap()
                self.add_text(line, [(0, level, line)])

    def add_text(self, text: str, headings: Sequence[tuple[int, int, str]] = ()) -> None:
        """A block of ``text`` whose headings are at offsets (``start``, ``level``, ``text``) into it."""
        text = _normalise_newlines(text)
        if not text:
            return
        separator = ("\n\n" if self._gap else "\n") if self._parts else ""
        self._gap = False
        base = self._length + len(separator)
        self._parts.append(separator + text)
        self._length = base + len(text)
        self.headings.extend(Heading(base + start, min(max(level, 1), 6), line) for start, level, line in headings)

    def loaded(self, title: str | None) -> LoadedText:
        """The text built, with ``title``, or the first heading's text when ``title`` is empty."""
        first = self.headings[0].text if self.headings else None
        return LoadedText("".join(self._parts), _clean_title(title) or first, tuple(self.headings))


class _Package:
    """A zip package whose declared sizes were checked, its parts read by name."""

    def __init__(self, name: str, data: bytes, kind: str) -> None:
        import zipfile

        _check_zip(name, data, kind)
        self.name = name
        self.kind = kind
        with _parser_errors(name, f"not a valid {kind} file"):
            self._zip: ZipFile = zipfile.ZipFile(io.BytesIO(data))
        self._names = set(self._zip.namelist())

    def read(self, part: str, required: bool = False) -> bytes | None:
        """The part's bytes, ``None`` when there is no such part (a :class:`LoadError` when ``required``)."""
        if part not in self._names:
            if required:
                raise LoadError(self.name, f"not a valid {self.kind} file (no {part})")
            return None
        with _parser_errors(self.name, f"cannot read {part} in the {self.kind}"):
            return self._zip.read(part)

    def xml(self, part: str, required: bool = False) -> _Element | None:
        """The part parsed as XML (see the module's docstring for how), ``None`` when there is no such part."""
        from lxml import etree

        data = self.read(part, required)
        if data is None:
            return None
        parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                                 remove_comments=True, remove_pis=True)
        with _parser_errors(self.name, f"not a valid {self.kind} file: {part}"):
            root = etree.fromstring(data, parser)
        info = root.getroottree().docinfo
        if info.doctype or info.internalDTD is not None:
            raise LoadError(self.name, f"{part} declares a DTD, which a {self.kind} never needs (refused: its "
                                       "entities could expand without bound)")
        return root

    def relationships(self, part: str) -> dict[str, tuple[str, str]]:
        """OPC relationships of ``part`` ("" for the package's own): id -> (type, target part name)."""
        folder, base = posixpath.split(part)
        root = self.xml(posixpath.join(folder, "_rels", f"{base}.rels"))
        out: dict[str, tuple[str, str]] = {}
        for rel in () if root is None else root.iter(f"{_PKG}Relationship"):
            target = rel.get("Target")
            if target and rel.get("TargetMode") != "External":
                out[rel.get("Id", "")] = (rel.get("Type", ""), _resolve(folder, target))
        return out

    def related(self, part: str, kind: str) -> str | None:
        """The first part that ``part`` relates to by a relationship type ending in ``/kind``."""
        return next((target for rtype, target in self.relationships(part).values()
                     if rtype.endswith(f"/{kind}")), None)


def _resolve(folder: str, href: str) -> str:
    """A part name from a (percent-encoded) reference relative to ``folder``, without its fragment."""
    href = unquote(href.split("#", 1)[0])
    return posixpath.normpath(href[1:] if href.startswith("/") else posixpath.join(folder, href)).lstrip("/")


def _text_of(element: _Element | None) -> str | None:
    return None if element is None else "".join(element.itertext())


# --- PowerPoint ---------------------------------------------------------------------------------------------

_PKG = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_PPTX_TITLES = frozenset({"title", "ctrTitle"})
# Slide furniture repeated on every slide (date, footer, slide number) and the notes page's slide picture.
_PPTX_FURNITURE = frozenset({"dt", "ftr", "hdr", "sldNum", "sldImg"})


@register(".pptx")
def _load_pptx(path: Path, data: bytes) -> LoadedText:
    package = _Package(str(path), data, "PPTX")
    main = package.related("", "officeDocument")
    if main is None:
        raise LoadError(package.name, "not a valid PPTX file (no presentation part)")
    presentation = package.xml(main, required=True)
    assert presentation is not None
    slides = package.relationships(main)
    text = _Text()
    for slide_id in presentation.iterfind(f"{_P}sldIdLst/{_P}sldId"):
        rel = slides.get(slide_id.get(f"{_R}id", ""))
        slide = None if rel is None else package.xml(rel[1])
        if rel is None or slide is None:
            continue
        text.gap()
        shapes = list(_pptx_shapes(slide))
        # The title first, wherever its shape lies in the drawing order.
        for shape, placeholder in shapes:
            if placeholder in _PPTX_TITLES:
                text.add(" ".join(_pptx_paragraphs(shape)), level=1)
        for shape, placeholder in shapes:
            if placeholder not in _PPTX_TITLES and placeholder not in _PPTX_FURNITURE:
                for paragraph in _pptx_paragraphs(shape):
                    text.add(paragraph)
        notes_part = package.related(rel[1], "notesSlide")
        notes = None if notes_part is None else package.xml(notes_part)
        for shape, placeholder in () if notes is None else _pptx_shapes(notes):
            if placeholder == "body":
                for paragraph in _pptx_paragraphs(shape):
                    text.add(paragraph)
    core = package.related("", "core-properties")
    properties = None if core is None else package.xml(core)
    return text.loaded(_text_of(None if properties is None else properties.find(_DC_TITLE)))


def _pptx_shapes(slide: _Element) -> Iterator[tuple[_Element, str | None]]:
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


def _pptx_paragraphs(shape: _Element) -> Iterator[str]:
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


# --- OpenDocument -------------------------------------------------------------------------------------------

_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
_PRESENTATION = "{urn:oasis:names:tc:opendocument:xmlns:presentation:1.0}"
_SVG = "{urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0}"
_MANIFEST = "{urn:oasis:names:tc:opendocument:xmlns:manifest:1.0}"
# Not the document's text as a reader sees it: deleted text kept for change tracking, generated tables of
# contents and indexes (copies of the headings), comments, alternative text, declarations.
_ODF_SKIPPED = frozenset({
    f"{_TEXT}tracked-changes", f"{_TEXT}table-of-content", f"{_TEXT}alphabetical-index",
    f"{_TEXT}illustration-index", f"{_TEXT}table-index", f"{_TEXT}object-index", f"{_TEXT}user-index",
    f"{_TEXT}bibliography", f"{_TEXT}note-citation", f"{_TEXT}ruby-text", f"{_TEXT}sequence-decls",
    f"{_TEXT}variable-decls", f"{_TEXT}user-field-decls", f"{_OFFICE}annotation", f"{_OFFICE}annotation-end",
    f"{_OFFICE}forms", f"{_SVG}title", f"{_SVG}desc", f"{_DRAW}page-thumbnail",
})
_ODP_FURNITURE = frozenset({"page-number", "date-time", "footer", "header"})


@register(".odt", ".odp")
def _load_odf(path: Path, data: bytes) -> LoadedText:
    kind = path.suffix.lstrip(".").upper()
    package = _Package(str(path), data, kind)
    manifest = package.xml("META-INF/manifest.xml")
    for entry in () if manifest is None else manifest.iterfind(f"{_MANIFEST}file-entry"):
        encrypted = entry.find(f"{_MANIFEST}encryption-data") is not None
        if encrypted and entry.get(f"{_MANIFEST}full-path") == "content.xml":
            raise LoadError(package.name, f"encrypted {kind} (password protected)")
    content = package.xml("content.xml", required=True)
    assert content is not None
    body = content.find(f"{_OFFICE}body")
    text = _Text()
    if body is not None:
        _odf_blocks(body, text)
    meta = package.xml("meta.xml")
    return text.loaded(_text_of(None if meta is None else meta.find(f"{_OFFICE}meta/{_DC_TITLE}")))


def _odf_blocks(body: _Element, text: _Text) -> None:
    """Adds the paragraphs, headings (``text:h`` by its outline level; a slide's title frame at level 1),
    list items and table cells under ``body`` to ``text`` in document order, each slide a group."""
    stack: list[_Element] = [body]
    while stack:
        node = stack.pop()
        tag = node.tag
        if tag in _ODF_SKIPPED or node.get(f"{_PRESENTATION}class") in _ODP_FURNITURE:
            continue
        if tag in (f"{_TEXT}p", f"{_TEXT}h"):
            line, nested = _odf_inline(node)
            text.add(line, _odf_level(node) if tag == f"{_TEXT}h" else None)
            stack.extend(reversed(nested))
        elif tag == f"{_DRAW}frame" and node.get(f"{_PRESENTATION}class") == "title":
            text.add(" ".join(_odf_inline(p)[0] for p in node.iter(f"{_TEXT}p")), level=1)
        elif tag == f"{_DRAW}page":
            text.gap()
            # The title first, wherever its frame lies in the drawing order.
            children = sorted(node, key=lambda child: child.get(f"{_PRESENTATION}class") != "title")
            stack.extend(reversed(children))
        elif isinstance(tag, str):
            stack.extend(reversed(node))


def _odf_level(heading: _Element) -> int:
    level = heading.get(f"{_TEXT}outline-level", "1")
    return int(level) if level.isdigit() else 1


def _odf_inline(paragraph: _Element) -> tuple[str, list[_Element]]:
    """A paragraph's own text, and the blocks nested in it (footnote bodies, text boxes, shapes) that are read
    after it as paragraphs of their own."""
    pieces: list[str] = [_ODF_WHITESPACE.sub(" ", paragraph.text or "")]
    nested: list[_Element] = []
    stack: list[_Element | str] = list(reversed(paragraph))
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            pieces.append(_ODF_WHITESPACE.sub(" ", node))
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
        elif tag not in _ODF_SKIPPED:
            pieces.append(_ODF_WHITESPACE.sub(" ", node.text or ""))
            stack.extend(reversed(node))
    return "".join(pieces), nested


# --- EPUB ---------------------------------------------------------------------------------------------------

_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_ENC = "{http://www.w3.org/2001/04/xmlenc#}"
_XHTML_TYPES = frozenset({"application/xhtml+xml", "text/html"})
# Font obfuscation (IDPF's and Adobe's) is the one "encryption" an EPUB without DRM has.
_FONT_OBFUSCATION = frozenset({"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"})
_HTML_HEADINGS = ["h1", "h2", "h3", "h4", "h5", "h6"]


@register(".epub")
def _load_epub(path: Path, data: bytes) -> LoadedText:
    package = _Package(str(path), data, "EPUB")
    encryption = package.xml("META-INF/encryption.xml")
    methods = () if encryption is None else encryption.iter(f"{_ENC}EncryptionMethod")
    if any(method.get("Algorithm") not in _FONT_OBFUSCATION for method in methods):
        raise LoadError(package.name, "encrypted EPUB (DRM)")
    container = package.xml("META-INF/container.xml", required=True)
    assert container is not None
    rootfile = next((r.get("full-path") for r in container.iter(f"{_CONTAINER}rootfile") if r.get("full-path")),
                    None)
    if rootfile is None:
        raise LoadError(package.name, "not a valid EPUB file (no package document in META-INF/container.xml)")
    opf_part = _resolve("", rootfile)
    opf = package.xml(opf_part, required=True)
    assert opf is not None
    folder = posixpath.dirname(opf_part)
    manifest = {item.get("id"): item for item in opf.iterfind(f"{_OPF}manifest/{_OPF}item")}
    text = _Text()
    read: set[str] = set()
    for ref in opf.iterfind(f"{_OPF}spine/{_OPF}itemref"):
        item = manifest.get(ref.get("idref"))
        if item is None or item.get("media-type") not in _XHTML_TYPES or not item.get("href"):
            continue
        part = _resolve(folder, item.get("href", ""))
        chapter = None if part in read else package.read(part)
        read.add(part)
        if chapter is not None:
            text.gap()
            text.add_text(*_epub_chapter(package.name, part, chapter))
    return text.loaded(_text_of(opf.find(f"{_OPF}metadata/{_DC_TITLE}")))


def _epub_chapter(name: str, part: str, data: bytes) -> tuple[str, list[tuple[int, int, str]]]:
    """A chapter's visible text, as loaders.py lays out HTML, and its h1-h6 headings (start, level, text)."""
    from bs4 import BeautifulSoup

    try:
        markup = decode_text(data, name)
    except LoadError as exc:
        raise LoadError(name, f"{exc.reason} in {part}", no_text=exc.no_text) from exc
    if len(markup) > MAX_HTML_CHARS:
        raise LoadError(name, f"{part} of {len(markup):,} characters, over the {MAX_HTML_CHARS:,} parsed")
    with _parser_errors(name, f"cannot parse {part}"):
        # html.parser, not an XML parser: XHTML's named entities (&nbsp;) need no DTD, and a DTD in the file is
        # never read (its entities are not expanded).
        soup = BeautifulSoup(markup, "html.parser")
    for tag in soup.find_all(_HIDDEN_HTML_TAGS):
        tag.decompose()
    # The HTML loader's own layout and headings (where each heading's text landed): one way to read HTML.
    chapter, found = _html_visible_text(soup)
    return chapter, [(h.start, h.level, h.text) for h in found]
