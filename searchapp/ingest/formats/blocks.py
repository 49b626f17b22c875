"""A loaded text built block by block, with its headings' offsets: how the zip packages of XML (PPTX, ODT/ODP,
EPUB) lay out what they hold.

The text is its paragraphs one a line, headings (with a blank line before them) and slides or chapters separated
by a blank line; each heading's offset is where its line starts in that text.
"""

from __future__ import annotations

from collections.abc import Sequence

from searchapp.ingest.formats.decoding import normalise_newlines
from searchapp.ingest.formats.format import SPACES, LoadedText, clean_title
from searchapp.types import Heading


class BlockText:
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
            line = SPACES.sub(" ", block).strip()
            if line:
                self.gap()
                self.add_text(line, [(0, level, line)])

    def add_text(self, text: str, headings: Sequence[tuple[int, int, str]] = ()) -> None:
        """A block of ``text`` whose headings are at offsets (``start``, ``level``, ``text``) into it."""
        text = normalise_newlines(text)
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
        return LoadedText("".join(self._parts), clean_title(title) or first, tuple(self.headings))
