"""Formats that are zip packages (DOCX, PPTX, ODT/ODP, EPUB): the package checked by its declared sizes before
anything is decompressed, its parts read by name, its XML parts parsed safely, its relationships followed.

The XML parts are parsed by lxml (already python-docx's parser) with entities never resolved, no DTD or network
access, libxml2's default depth and size limits, and any part that declares a DTD is refused: entity expansion
cannot make a small part large.
"""

from __future__ import annotations

import io
import posixpath
from typing import TYPE_CHECKING
from urllib.parse import unquote

from searchapp.errors import LoadError
from searchapp.ingest.formats.format import mb
from searchapp.ingest.formats.parsers import parser_errors

if TYPE_CHECKING:
    from zipfile import ZipFile

    from lxml.etree import _Element

# What a zip-packaged file may decompress to, in all, and its number of parts: a few hundred kilobytes can hold
# gigabytes of XML (tests/integration/test_hostile_files.py).
MAX_ZIP_BYTES = 64 * 2**20
MAX_ZIP_PARTS = 10_000
# OPC (the Office formats' packaging): a package's relationships.
PKG = "{http://schemas.openxmlformats.org/package/2006/relationships}"
DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"


def check_zip(name: str, data: bytes, kind: str) -> None:
    """Refuse a zip whose parts would decompress to more than ``MAX_ZIP_BYTES`` (or that has more than
    ``MAX_ZIP_PARTS`` parts) before anything is decompressed. The sizes checked are the declared ones, which
    bound what is read: Python's zipfile stops each part at its declared size. ``kind`` names the format in
    the reasons ("not a valid PPTX file")."""
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            parts = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise LoadError(name, f"not a valid {kind} file ({exc})") from exc
    if len(parts) > MAX_ZIP_PARTS:
        raise LoadError(name, f"{len(parts):,} parts in the {kind}, over the {MAX_ZIP_PARTS:,} allowed")
    total = sum(p.file_size for p in parts)
    if total > MAX_ZIP_BYTES:
        raise LoadError(name, f"decompresses to {mb(total)}, over the {mb(MAX_ZIP_BYTES)} allowed")


class Package:
    """A zip package whose declared sizes were checked, its parts read by name."""

    def __init__(self, name: str, data: bytes, kind: str) -> None:
        import zipfile

        check_zip(name, data, kind)
        self.name = name
        self.kind = kind
        with parser_errors(name, f"not a valid {kind} file"):
            self._zip: ZipFile = zipfile.ZipFile(io.BytesIO(data))
        self._names = set(self._zip.namelist())

    def read(self, part: str, required: bool = False) -> bytes | None:
        """The part's bytes, ``None`` when there is no such part (a :class:`LoadError` when ``required``)."""
        if part not in self._names:
            if required:
                raise LoadError(self.name, f"not a valid {self.kind} file (no {part})")
            return None
        with parser_errors(self.name, f"cannot read {part} in the {self.kind}"):
            return self._zip.read(part)

    def xml(self, part: str, required: bool = False) -> _Element | None:
        """The part parsed as XML (see the module's docstring for how), ``None`` when there is no such part."""
        from lxml import etree

        data = self.read(part, required)
        if data is None:
            return None
        parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                                 remove_comments=True, remove_pis=True)
        with parser_errors(self.name, f"not a valid {self.kind} file: {part}"):
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
        for rel in () if root is None else root.iter(f"{PKG}Relationship"):
            target = rel.get("Target")
            if target and rel.get("TargetMode") != "External":
                out[rel.get("Id", "")] = (rel.get("Type", ""), resolve(folder, target))
        return out

    def related(self, part: str, kind: str) -> str | None:
        """The first part that ``part`` relates to by a relationship type ending in ``/kind``."""
        return next((target for rtype, target in self.relationships(part).values()
                     if rtype.endswith(f"/{kind}")), None)


def resolve(folder: str, href: str) -> str:
    """A part name from a (percent-encoded) reference relative to ``folder``, without its fragment."""
    href = unquote(href.split("#", 1)[0])
    return posixpath.normpath(href[1:] if href.startswith("/") else posixpath.join(folder, href)).lstrip("/")


def text_of(element: _Element | None) -> str | None:
    """All the text inside ``element``, ``None`` for no element."""
    return None if element is None else "".join(element.itertext())
