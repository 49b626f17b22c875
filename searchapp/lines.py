"""The one rule for lines and columns of a document's text: where a character offset stands as ``line:column``.

A line ends at ``"\\n"``, ``"\\r\\n"`` or ``"\\r"`` (as editors and the Language Server Protocol count them; a
file's text has ``"\\n"`` alone, its line endings normalised when it is read, ``ingest/formats/decoding.py``, so
only texts added through the API can hold the other two). Lines and columns count from 1, columns in characters
(Unicode code points, as every offset of the index): the first character of a text is at ``1:1``, the character
after a line break at column 1 of the next line. Every function here is linear in the text it is given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

BREAK = re.compile(r"\r\n|\r|\n")


class Position(NamedTuple):
    """A place in a text: 1-based ``line`` and ``column`` (in characters)."""

    line: int
    column: int


START = Position(1, 1)


def breaks(text: str) -> int:
    """How many line breaks ``text`` holds (``"\\r\\n"`` counts once)."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def advance(at: Position, text: str) -> Position:
    """The position just after ``text`` when it begins at ``at``."""
    n = breaks(text)
    if n == 0:
        return Position(at.line, at.column + len(text))
    last = max(text.rfind("\n"), text.rfind("\r"))
    return Position(at.line + n, len(text) - last)


def end_of(line: int | None, column: int | None, text: str) -> Position | None:
    """Where a passage ``text`` that starts at ``line:column`` ends (the position just past its last character);
    ``None`` where its start is not known."""
    if line is None or column is None:
        return None
    return advance(Position(line, column), text)


def positions(text: str, offsets: Sequence[int]) -> list[Position]:
    """The positions of ``offsets`` (ascending, within ``[0, len(text)]``) in ``text``: one pass over the text,
    however many offsets there are. A ``"\\r\\n"`` is never cut by an offset here (those of passages start at a
    word)."""
    out: list[Position] = []
    at, pos = START, 0
    for offset in offsets:
        if offset < pos:  # not ascending: counted again from the start (no caller gives such offsets)
            at, pos = START, 0
        at = advance(at, text[pos:offset])
        pos = offset
        out.append(at)
    return out


def head(text: str, n: int) -> int:
    """Where the first ``n + 1`` lines of ``text`` end: the offset of its ``(n + 1)``-th line break (``len(text)``
    where it has fewer), so that ``text[:head(text, n)]`` is the rest of its first line and ``n`` lines more."""
    for i, m in enumerate(BREAK.finditer(text)):
        if i == n:
            return m.start()
    return len(text)


def tail(text: str, n: int) -> int:
    """Where the last ``n + 1`` lines of ``text`` begin: just after its ``(n + 1)``-th line break from the end (0
    where it has fewer), so that ``text[tail(text, n):]`` is ``n`` whole lines and the start of its last one."""
    found = [m.end() for m in BREAK.finditer(text)]
    return found[-(n + 1)] if len(found) > n else 0


# -- where a passage stands in its file, where that is not the text's own lines -----------------------------------
#
# A reader that lays a file's text out anew (HTML) gives, beside the text, its source lines: ``(offset, line)`` pairs,
# offsets ascending, each saying that the text's characters from ``offset`` on come from the file's line ``line``
# (from 1), until the next pair. A paged format (PDF) gives where each page starts in the text. Each passage
# records its part of either (:func:`places`): the pairs within it, offsets from its own start, as ``"0:28,17:29"``
# (``source_lines``), and the page it starts on (``page``); ``None`` both for the formats whose text keeps the
# file's lines (every other one).

SourceLines = tuple[tuple[int, int], ...]


class Place(NamedTuple):
    """Where a passage starts: its text's ``line`` and ``column`` (:class:`Position`), its source lines (the pairs
    within it, offsets from its start, as :func:`dump_source_lines` writes them; ``None`` where its text's lines are
    the file's) and its ``page`` (from 1; ``None`` for a format without pages)."""

    line: int
    column: int
    source_lines: str | None = None
    page: int | None = None


def places(text: str, starts: Sequence[int], ends: Sequence[int], source_lines: SourceLines | None = None,
           pages: Sequence[int] = ()) -> list[Place]:
    """The :class:`Place` of each passage ``[starts[i], ends[i])`` of ``text`` (in text order), given the text's
    ``source_lines`` and the offsets its ``pages`` start at: one pass over the text and the pairs."""
    import bisect

    out: list[Place] = []
    offsets = [at for at, _ in source_lines] if source_lines else []
    for (start, end), at in zip(zip(starts, ends, strict=True), positions(text, starts), strict=True):
        own = None
        if source_lines:
            i = max(bisect.bisect_right(offsets, start) - 1, 0)
            pairs = [(0, source_lines[i][1])]
            i += 1
            while i < len(offsets) and offsets[i] < end:
                pairs.append((offsets[i] - start, source_lines[i][1]))
                i += 1
            own = dump_source_lines(pairs)
        page = bisect.bisect_right(pages, start) if pages else None
        out.append(Place(at.line, at.column, own, page))
    return out


def dump_source_lines(pairs: Sequence[tuple[int, int]]) -> str:
    """``(offset, line)`` pairs as stored: ``"0:28,17:29"``."""
    return ",".join(f"{at}:{line}" for at, line in pairs)


def load_source_lines(stored: str | None) -> SourceLines | None:
    """What :func:`dump_source_lines` wrote, back as pairs (``None`` for ``None`` or an empty text)."""
    if not stored:
        return None
    return tuple((int(at), int(line)) for at, _, line in (pair.partition(":") for pair in stored.split(",")))


def source_line(pairs: SourceLines, offset: int) -> int:
    """The file's line of the character at ``offset`` of a passage whose source lines are ``pairs``."""
    import bisect

    return pairs[max(bisect.bisect_right([at for at, _ in pairs], offset) - 1, 0)][1]


def spot(line: int | None, column: int | None, text: str,
         source_lines: SourceLines | None) -> tuple[int | None, int | None, int | None, int | None]:
    """``(line, column, end_line, end_column)`` of a passage as a hit shows it: where its ``text``, starting at
    ``line:column`` of its document's text, starts and ends (:func:`end_of`); where it has ``source_lines``, its
    first and last characters' lines in the file, and no columns (a column of the laid-out text is not one of the
    file, and the file's is not recorded)."""
    if source_lines:
        return source_lines[0][1], None, source_line(source_lines, max(len(text) - 1, 0)), None
    ends = end_of(line, column, text)
    return line, column, None if ends is None else ends.line, None if ends is None else ends.column
