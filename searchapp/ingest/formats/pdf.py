"""PDF: the text layer of each page (pypdf), a blank line between pages; the outline's entries as headings."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from searchapp.errors import LoadError
from searchapp.ingest.formats.decoding import normalise_newlines
from searchapp.ingest.formats.format import Format, LoadedText, clean_title
from searchapp.ingest.formats.parsers import parser_errors
from searchapp.types import Heading

if TYPE_CHECKING:
    from pypdf import PdfReader

# A PDF's outline is read up to this many entries: it is a guide to the text, not text.
MAX_OUTLINE_ENTRIES = 10_000


def _load_pdf(path: Path, data: bytes) -> LoadedText:
    from pypdf import PasswordType, PdfReader
    from pypdf.errors import DependencyError

    name = str(path)
    with parser_errors(name, "broken PDF"):
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            # Many PDFs are "encrypted" only to restrict printing/copying and open with the empty password.
            try:
                opened = reader.decrypt("") != PasswordType.NOT_DECRYPTED
            except DependencyError as exc:
                raise LoadError(name, "encrypted PDF (reading it needs the 'cryptography' package)") from exc
            if not opened:
                raise LoadError(name, "encrypted PDF")
        pages = _page_texts(reader)
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    if not any(page.strip() for page in pages):
        raise LoadError(name, "no text layer (scanned PDF?)", no_text=True)
    text = normalise_newlines("\n\n".join(pages))
    return LoadedText(text, clean_title(title), _outline(reader, pages, text), pages=tuple(_page_starts(pages)))


# Version 1: where each page starts in the text, for hits' pages.
PDF = Format("PDF", (".pdf",), _load_pdf, is_text=False, loggers=("pypdf",), version=1)


def _page_texts(reader: PdfReader) -> list[str]:
    """Each page's text, in page order; a page object the page tree lists again is read once (its later places
    are empty): a 120 KB PDF listing one page 20,000 times is one page of text, not 20,000 copies."""
    read: set[tuple[int, int]] = set()
    texts = []
    for page in reader.pages:
        ref = page.indirect_reference
        key = None if ref is None else (ref.idnum, ref.generation)
        texts.append("" if key in read else page.extract_text() or "")
        if key is not None:
            read.add(key)
    return texts


def _page_starts(pages: list[str]) -> list[int]:
    """Where each page starts in the pages' joined text (a blank line between them, its line endings normalised)."""
    # A page's chunk ends in the separator's newlines, so normalising chunk by chunk gives the joined text's offsets.
    page_starts = [0]
    for page in pages[:-1]:
        page_starts.append(page_starts[-1] + len(normalise_newlines(page + "\n\n")))
    return page_starts


def _outline(reader: PdfReader, pages: list[str], text: str) -> tuple[Heading, ...]:
    """The outline's entries as headings, best effort (a broken outline gives none, never a failed load): level
    from nesting, offset where the entry's title starts a line on its page, else the page's start."""
    page_starts = _page_starts(pages)
    headings: list[Heading] = []
    try:
        stack: list[tuple[list[object], int]] = [(list(reader.outline), 1)]
        while stack and len(headings) < MAX_OUTLINE_ENTRIES:
            entries, level = stack.pop()
            # Each list that follows an entry holds that entry's children.
            for position, entry in enumerate(entries):
                if isinstance(entry, list):
                    continue
                if position + 1 < len(entries) and isinstance(entries[position + 1], list):
                    stack.append((entries[position + 1], level + 1))
                number = reader.get_destination_page_number(entry)  # type: ignore[arg-type]
                words = " ".join(str(getattr(entry, "title", "") or "").split())
                if words and number is not None and 0 <= number < len(pages):
                    start = page_starts[number]
                    end = start + len(normalise_newlines(pages[number]))
                    found = text.find(words, start, end)
                    at = text.rfind("\n", start, found) + 1 if found >= 0 else start
                    headings.append(Heading(max(at, start), min(level, 6), words))
    except Exception:  # noqa: BLE001 - any outline problem (pypdf raises many types) only loses the headings
        return ()
    return tuple(sorted(headings, key=lambda h: h.start))
