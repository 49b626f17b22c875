"""The built-in formats, in one explicit list, and a path's format found by its name or its suffix."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from searchapp.ingest.formats.code import CODE
from searchapp.ingest.formats.docx import DOCX
from searchapp.ingest.formats.epub import EPUB
from searchapp.ingest.formats.format import Format
from searchapp.ingest.formats.html import HTML
from searchapp.ingest.formats.opendocument import ODP, ODT
from searchapp.ingest.formats.pdf import PDF
from searchapp.ingest.formats.pptx import PPTX
from searchapp.ingest.formats.text import ASCIIDOC, MARKDOWN, RST, TXT

BUILTIN: tuple[Format, ...] = (TXT, MARKDOWN, RST, ASCIIDOC, HTML, PDF, DOCX, PPTX, ODT, ODP, EPUB, *CODE)


def by_suffix(formats: Iterable[Format]) -> dict[str, Format]:
    """``formats`` keyed by each of their suffixes; ``ValueError`` when two claim one suffix."""
    return _keyed(formats, lambda entry: entry.suffixes)


def by_name(formats: Iterable[Format]) -> dict[str, Format]:
    """``formats`` keyed by each of the whole file names they claim; ``ValueError`` when two claim one name."""
    return _keyed(formats, lambda entry: entry.names)


def _keyed(formats: Iterable[Format], keys: Callable[[Format], Iterable[str]]) -> dict[str, Format]:
    out: dict[str, Format] = {}
    for entry in formats:
        for key in keys(entry):
            if key in out:
                raise ValueError(f"{key} is claimed by both {out[key].name} and {entry.name}")
            out[key] = entry
    return out


FORMATS: dict[str, Format] = by_suffix(BUILTIN)
NAMES: dict[str, Format] = by_name(BUILTIN)


def format_for(path: Path) -> Format | None:
    """The format of ``path`` by its whole name (``Makefile``, compared exactly), else by its suffix (compared
    lower-case), or ``None`` when no format claims it."""
    return NAMES.get(path.name) or FORMATS.get(path.suffix.lower())


def supported_suffixes() -> list[str]:
    """Every suffix a format claims, sorted, then the whole file names formats claim."""
    return [*sorted(FORMATS), *sorted(NAMES)]
