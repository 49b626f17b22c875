"""What a file format is to searchapp (:class:`Format`) and what its loader gives (:class:`LoadedText`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from searchapp.lines import SourceLines
from searchapp.types import Heading

# Runs of white space, collapsed to one space in a heading's line and in HTML's flowing text.
SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class LoadedText:
    """What a loader extracts from a file: its text, when the format names one its title, and its headings
    (offsets into ``text``, in text order). Where its text's lines are not the file's (HTML lays its text out anew),
    its ``source_lines``: ``(offset, line)`` pairs, offsets ascending from 0, the file's line (from 1) of the text's
    characters from that offset on (``lines.SourceLines``); ``None`` where the text keeps the file's lines. A
    paged format's ``pages``: the offset each page starts at in ``text`` (PDF), ascending from 0."""

    text: str
    title: str | None
    headings: tuple[Heading, ...] = ()
    source_lines: SourceLines | None = None
    pages: tuple[int, ...] = ()


Loader = Callable[[Path, bytes], LoadedText]


@dataclass(frozen=True)
class Format:
    """One file format: every fact about it that the rest of the ingest asks.

    ``suffixes``: lower-case, with their dot (``".md"``); a path's suffix is compared lower-case. ``names``: whole
    file names the format claims whatever their suffix, compared exactly (``Makefile``). ``loader``: the
    file's bytes to its text (raising :class:`~searchapp.errors.LoadError` with a one-line reason).
    ``is_text``: text to decode, sniffed for binary content on its first bytes before the rest is read.
    ``loggers``: the loggers of the third-party parsers the loader calls, captured while it runs
    (``parsers.quiet_parsers``). ``version``: the version of what the loader makes of a file's bytes (its text,
    title and headings); raise it when that changes, and the next ingest reads this format's files again
    (``ingest/reading.reader_version``; the history in docs/architecture.md, "Reader versions").
    ``splits_at_headings``: no passage runs across a heading's start (code: each passage within one definition,
    so that its section is the definition it holds); prose keeps packing small sections together.

    What any format's file may load as is bounded once for all (``load.max_chars``: no more characters than a
    plain text file of the size limit holds); a loader bounds what it parses on the way (``zipped.MAX_ZIP_BYTES``,
    ``html.MAX_HTML_CHARS``) and reads a part listed twice once.
    """

    name: str
    suffixes: tuple[str, ...]
    loader: Loader
    is_text: bool
    loggers: tuple[str, ...] = ()
    version: int = 0
    names: tuple[str, ...] = ()
    splits_at_headings: bool = False

    def __post_init__(self) -> None:
        bad = [s for s in self.suffixes if not s.startswith(".") or len(s) < 2 or s != s.lower()]
        if not (self.suffixes or self.names) or bad:
            raise ValueError(f"{self.name}: suffixes must look like '.ext' in lower case, got {self.suffixes!r}")
        if any(not n or "/" in n for n in self.names):
            raise ValueError(f"{self.name}: names must be file names, got {self.names!r}")


def clean_title(title: object) -> str | None:
    """A title on one line, its white space collapsed; ``None`` for an empty one or one that is not a string."""
    return (" ".join(title.split()) or None) if isinstance(title, str) else None


def mb(n: int) -> str:
    """A size as the reasons show it: whole megabytes from 1 MB up, else bytes."""
    return f"{n / 2**20:.0f} MB" if n >= 2**20 else f"{n} bytes"
