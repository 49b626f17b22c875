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
