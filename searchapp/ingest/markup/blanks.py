"""What every markup reader shares: a mask of the characters that are markup, turned into spaces of the same
length at the end (newlines kept), so that the text a reader returns has the decoded file's length and every
offset into it is an offset into the file; the headings found on the way; delimiter pairing for emphasis."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from searchapp.types import Heading

_RUNS = re.compile(rb"\x01+")


@dataclass(frozen=True)
class Reading:
    """A marked-up text as a reader sees it: ``text`` has the input's length, each character either the input's
    own or a space where the input had markup (newlines are never blanked); ``headings`` in text order (offsets
    into ``text``); ``title`` the document's title where the format names one."""

    text: str
    headings: tuple[Heading, ...]
    title: str | None


class Blanks:
    """The characters of ``text`` found to be markup (``mask``, one byte per character) and the characters that
    are literal and must not be read as markup (``kept``: code spans, escaped characters, link targets' insides)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.mask = bytearray(len(text))
        self.kept = bytearray(len(text))
        # (line start, level, content start, content end): the heading's text is read from the blanked text.
        self._headings: list[tuple[int, int, int, int]] = []

    def blank(self, start: int, end: int) -> None:
        if end > start:
            self.mask[start:end] = b"\x01" * (end - start)

    def keep(self, start: int, end: int) -> None:
        if end > start:
            self.kept[start:end] = b"\x01" * (end - start)

    def free(self, start: int, end: int) -> bool:
        """Whether no character in ``[start, end)`` is already markup or kept literal."""
        return self.mask.find(1, start, end) < 0 and self.kept.find(1, start, end) < 0

    def usable(self, i: int) -> bool:
        return not (self.mask[i] or self.kept[i])

    def first_used(self, start: int, end: int) -> int:
        """The first position in ``[start, end)`` that is markup or kept literal; ``end`` where none is."""
        found = [at for at in (self.mask.find(1, start, end), self.kept.find(1, start, end)) if at >= 0]
        return min(found, default=end)

    def first_usable(self, start: int, end: int) -> int:
        """The first position in ``[start, end)`` that is neither markup nor kept literal; ``end`` where none is."""
        at = start
        while at < end:
            at = self.mask.find(0, at, end)
            if at < 0:
                return end
            if not self.kept[at]:
                return at
            at = self.kept.find(0, at, end)
            if at < 0:
                return end
        return end

    def heading(self, line_start: int, level: int, start: int, end: int) -> None:
        self._headings.append((line_start, min(max(level, 1), 6), start, end))

    def result(self, title_of: int | None = None) -> Reading:
        """The blanked text, its headings, and as title the text of heading number ``title_of`` (or none)."""
        text = self.text
        pieces: list[str] = []
        previous = 0
        for run in _RUNS.finditer(self.mask):
            start, end = run.span()
            pieces.append(text[previous:start])
            pieces.append("\n".join(" " * len(part) for part in text[start:end].split("\n")))
            previous = end
        pieces.append(text[previous:])
        shown = "".join(pieces)
        headings: list[Heading] = []
        title: str | None = None
        for number, (line_start, level, start, end) in enumerate(self._headings):
            words = " ".join(shown[start:end].split())
            if words:
                headings.append(Heading(line_start, level, words))
                if number == title_of:
                    title = words
        headings.sort(key=lambda h: h.start)
        return Reading(shown, tuple(headings), title)

    @property
    def heading_count(self) -> int:
        return len(self._headings)


_OTHER, _SPACE, _PUNCT = 0, 1, 2


def _kind(ch: str, kinds: dict[str, int]) -> int:
    """White space, punctuation (Unicode P and S categories) or other; ``kinds`` remembers the characters seen (a
    stretch of delimiter runs asks about the same few characters again and again)."""
    kind = kinds.get(ch)
    if kind is None:
        kind = kinds[ch] = _SPACE if ch.isspace() else _PUNCT if unicodedata.category(ch)[0] in "PS" else _OTHER
    return kind


def pair_delimiters(blanks: Blanks, runs: Iterable[tuple[int, int]], intraword: bool) -> None:
    """Blank the emphasis-like delimiter runs that pair up (``**a**``, ``_b_``): each run is ``(start, end)`` of
    one repeated character; an opener (followed by a non-space) pairs with the nearest later closer (preceded by a
    non-space) of the same character, inner sides first, as CommonMark does in the common cases. A run that pairs
    with nothing is literal text (``5 * 3``, ``*args``). ``intraword``: whether a delimiter between two letters may
    open or close (``*`` in Markdown; never ``_``)."""
    text = blanks.text
    openers: dict[str, list[list[int]]] = {}
    kinds: dict[str, int] = {}
    for start, end in runs:
        ch = text[start]
        before = _kind(text[start - 1], kinds) if start > 0 else _SPACE
        after = _kind(text[end], kinds) if end < len(text) else _SPACE
        left = after != _SPACE and (after != _PUNCT or before != _OTHER)
        right = before != _SPACE and (before != _PUNCT or after != _OTHER)
        if intraword and ch != "_":
            can_open, can_close = left, right
        else:
            can_open = left and (not right or before == _PUNCT)
            can_close = right and (not left or after == _PUNCT)
        stack = openers.setdefault(ch, [])
        remaining = end - start
        if can_close:
            while remaining and stack:
                opener = stack[-1]
                used = min(opener[1] - opener[0], remaining)
                blanks.blank(opener[1] - used, opener[1])
                blanks.blank(start, start + used)
                opener[1] -= used
                start += used
                remaining -= used
                if opener[1] == opener[0]:
                    stack.pop()
        if remaining and can_open:
            stack.append([start, end])
