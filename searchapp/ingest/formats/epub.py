"""EPUB: the chapters in spine order, each read as HTML is (``html.py``), separated by a blank line; the title
from the package document's metadata. A DRM-encrypted book is refused (font obfuscation is not DRM)."""

from __future__ import annotations

import posixpath
from pathlib import Path

from searchapp.errors import LoadError
from searchapp.ingest.formats import html
from searchapp.ingest.formats.blocks import BlockText
from searchapp.ingest.formats.decoding import decode_text
from searchapp.ingest.formats.format import Format, LoadedText
from searchapp.ingest.formats.zipped import DC_TITLE, Package, resolve, text_of

_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_ENC = "{http://www.w3.org/2001/04/xmlenc#}"
_XHTML_TYPES = frozenset({"application/xhtml+xml", "text/html"})
# Font obfuscation (IDPF's and Adobe's) is the one "encryption" an EPUB without DRM has.
_FONT_OBFUSCATION = frozenset({"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"})


def _load_epub(path: Path, data: bytes) -> LoadedText:
    package = Package(str(path), data, "EPUB")
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
    opf_part = resolve("", rootfile)
    opf = package.xml(opf_part, required=True)
    assert opf is not None
    folder = posixpath.dirname(opf_part)
    manifest = {item.get("id"): item for item in opf.iterfind(f"{_OPF}manifest/{_OPF}item")}
    text = BlockText()
    read: set[str] = set()
    for ref in opf.iterfind(f"{_OPF}spine/{_OPF}itemref"):
        item = manifest.get(ref.get("idref"))
        if item is None or item.get("media-type") not in _XHTML_TYPES or not item.get("href"):
            continue
        part = resolve(folder, item.get("href", ""))
        chapter = None if part in read else package.read(part)
        read.add(part)
        if chapter is not None:
            text.gap()
            text.add_text(*_chapter(package.name, part, chapter))
    return text.loaded(text_of(opf.find(f"{_OPF}metadata/{DC_TITLE}")))


EPUB = Format("EPUB", (".epub",), _load_epub, is_text=False, loggers=html.LOGGERS)


def _chapter(name: str, part: str, data: bytes) -> tuple[str, list[tuple[int, int, str]]]:
    """A chapter's visible text, laid out as an HTML file's is, and its h1-h6 headings (start, level, text)."""
    try:
        markup = decode_text(data, name)
    except LoadError as exc:
        raise LoadError(name, f"{exc.reason} in {part}", no_text=exc.no_text) from exc
    chapter, found, _ = html.visible_text(html.parse_html(name, markup, part))
    return chapter, [(h.start, h.level, h.text) for h in found]
