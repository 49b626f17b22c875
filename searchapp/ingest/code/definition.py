"""What an outliner finds in a code or configuration file (:class:`Definition`), and the line walk outliners share.

Outliners count lines from 0, each line ending at ``"\\n"`` (a loaded text has no other line break,
``ingest/formats/decoding.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

# The most definitions one file is outlined into: a hostile file of a million one-line sections would otherwise
# make a million headings; past it the rest of the file stays under the last one.
MAX_DEFINITIONS = 10_000
# A definition's name, as its heading shows it, is cut to this many characters (a signature over many lines is
# named by its first).
MAX_NAME_CHARS = 80


@dataclass
class Definition:
    """One definition: its first line (``start``, comments and decorators above it included), its nesting
    ``depth`` (0 at the top of the file), its ``name``, and its last line ``end`` where the outliner knows it
    (``None``: it runs until the next definition, as a Markdown section does)."""

    start: int
    depth: int
    name: str
    end: int | None = None


def lines(text: str) -> Iterator[tuple[int, int, int]]:
    """``(number, start, end)`` of each line of ``text`` (``end`` before its ``"\\n"``), without holding them."""
    number = start = 0
    size = len(text)
    while start <= size:
        end = text.find("\n", start)
        if end < 0:
            end = size
        yield number, start, end
        number += 1
        start = end + 1


def name_of(line: str) -> str:
    """A definition's line as its heading's text: stripped, a trailing block opener dropped, runs of whitespace
    collapsed, cut to :data:`MAX_NAME_CHARS`."""
    name = " ".join(line.split())
    name = name.removesuffix("{").rstrip().removesuffix(":").rstrip() or name
    return name if len(name) <= MAX_NAME_CHARS else name[: MAX_NAME_CHARS - 1] + "…"


def with_comments(text: str, found: list[Definition], prefixes: tuple[str, ...]) -> list[Definition]:
    """``found`` with each definition's start moved up over the comment (or decorator, attribute) lines right above
    it at its own indentation: they describe it, so they belong to its passage and section. Never above the line
    after the previous definition's start, so each line is looked at once or twice: linear."""
    if not found or not prefixes:
        return found
    wanted = {d.start for d in found}
    last = max(wanted)
    kept: dict[int, tuple[int, int]] = {}  # line number -> (start offset, end offset), for the lines needed
    window: list[tuple[int, int, int]] = []
    for number, start, end in lines(text):
        if number in wanted:
            kept.update({n: (s, e) for n, s, e in window})
            kept[number] = (start, end)
            window = []
        else:
            window.append((number, start, end))
            if len(window) > 64:  # a run of comments longer than this is a comment of its own, not a preface
                window.pop(0)
        if number >= last:
            break
    floor = -1
    for definition in found:
        start, end = kept[definition.start]
        indent = _indent(text, start, end)
        line = definition.start
        while line - 1 > floor and line - 1 in kept:
            s, e = kept[line - 1]
            above = text[s:e]
            if _indent(text, s, e) != indent or not above.lstrip().startswith(prefixes):
                break
            line -= 1
        floor = definition.start
        definition.start = line
    return found


def _indent(text: str, start: int, end: int) -> int:
    at = start
    while at < end and text[at] in " \t":
        at += 1
    return at - start
