"""HTML: the visible text laid out as a browser shows it, roughly, with the h1-h6 headings where their text lands.
EPUB chapters are read the same way (``epub.py``)."""

from __future__ import annotations

import bisect
import re
from pathlib import Path
from typing import TYPE_CHECKING

from searchapp.errors import LoadError
from searchapp.ingest.formats import decoding
from searchapp.ingest.formats.decoding import decode_text, normalise_newlines
from searchapp.ingest.formats.format import SPACES, Format, LoadedText, clean_title
from searchapp.ingest.formats.parsers import parser_errors
from searchapp.types import Heading

if TYPE_CHECKING:
    from bs4 import BeautifulSoup

# The longest HTML text parsed: the parser keeps tens of bytes per character.
MAX_HTML_CHARS = 32 * 2**20
# The loggers of what an HTML reader calls: decoding's and BeautifulSoup's.
LOGGERS = (*decoding.LOGGERS, "bs4")
_HIDDEN_TAGS = ["script", "style", "noscript", "template", "title"]
_BLOCK_TAGS = frozenset(
    "address article aside blockquote body caption dd details dialog div dl dt fieldset figcaption figure"
    " footer form h1 h2 h3 h4 h5 h6 header hr html li main nav ol p pre section summary table tbody td tfoot"
    " th thead tr ul".split()
)


def _load_html(path: Path, data: bytes) -> LoadedText:
    name = str(path)
    soup = parse_html(name, decode_text(data, name), "HTML")
    titles = (clean_title(tag.get_text()) for tag in (soup.title, soup.find("h1")) if tag is not None)
    title = next((t for t in titles if t), None)
    visible, headings = visible_text(soup)
    return LoadedText(visible, title, headings)


HTML = Format("HTML", (".html", ".htm"), _load_html, is_text=True, loggers=LOGGERS)


def parse_html(name: str, markup: str, what: str) -> BeautifulSoup:
    """``markup`` parsed by html.parser, refused (naming ``what``: "HTML", an EPUB's part) when it is longer
    than ``MAX_HTML_CHARS``. html.parser, not an XML parser, for XHTML too: its named entities (``&nbsp;``) need
    no DTD, and a DTD in the file is never read (its entities are not expanded)."""
    from bs4 import BeautifulSoup

    if len(markup) > MAX_HTML_CHARS:
        raise LoadError(name, f"{what} of {len(markup):,} characters, over the {MAX_HTML_CHARS:,} parsed")
    with parser_errors(name, f"cannot parse {what}"):
        return BeautifulSoup(markup, "html.parser")


def visible_text(soup: BeautifulSoup) -> tuple[str, tuple[Heading, ...]]:
    """Text as a browser lays it out, roughly: blocks on their own lines, whitespace collapsed elsewhere; and
    the h1-h6 headings, where their text landed. Scripts, styles and the like are taken out of ``soup``, and so
    is ``<title>``: it is not page content (a loader reads the title first)."""
    from bs4.element import NavigableString, PageElement, PreformattedString, Tag

    for tag in soup.find_all(_HIDDEN_TAGS):
        tag.decompose()
    pieces: list[str] = []
    # An explicit stack, not recursion: deeply nested markup must not hit the recursion limit.
    # ``None`` marks the end of a block element, a string the end of a heading.
    stack: list[PageElement | str | None] = [soup]
    while stack:
        node = stack.pop()
        if node is None:
            pieces.append("\n")
        elif isinstance(node, str) and not isinstance(node, NavigableString):
            pieces.append(node)
        elif isinstance(node, Tag):
            if node.name == "br":
                pieces.append("\n")
            elif node.name == "pre":
                pieces.append(f"\n{_SENTINEL_RE.sub('', node.get_text())}\n")
            else:
                if node.name in _BLOCK_TAGS:
                    pieces.append("\n")
                    stack.append(None)
                if node.name in _HEADING_START:
                    pieces.append(_HEADING_START[node.name])
                    stack.append(_HEADING_END)
                stack.extend(reversed(node.contents))
        elif isinstance(node, NavigableString) and not isinstance(node, PreformattedString):
            # PreformattedString covers comments, doctypes, CDATA and processing instructions.
            pieces.append(SPACES.sub(" ", _SENTINEL_RE.sub("", str(node))))
    lines: list[str] = []
    starts = ""  # marks of headings starting on lines that hold nothing else: they go to the next line
    for line in normalise_newlines("".join(pieces)).split("\n"):
        line = _strip_keeping_marks(line)
        if line and not line.strip("".join(_SENTINELS)):
            ends = len(line) - len(line.lstrip(_HEADING_END))
            if lines and not starts:
                lines[-1] += line[:ends]
            else:
                starts += line[:ends]
            starts += line[ends:]
            line = ""
        elif starts:
            line, starts = starts + line, ""
        lines.append(line)
    if starts:
        lines.append(starts)
    # Blank lines collapsed only once the marks are out: a line that held only marks (nested empty headings)
    # is blank then, not before.
    return _collapse_blank_lines(*_take_out_marks("\n".join(lines)))


_BLANK_LINES = re.compile(r"\n{3,}")


def _collapse_blank_lines(text: str, headings: tuple[Heading, ...]) -> tuple[str, tuple[Heading, ...]]:
    """``text`` with each run of blank lines cut to one and its ends stripped, and ``headings`` moved with their
    lines (one whose line was cut, a blank one, moves to the line after the run)."""
    pieces: list[str] = []
    starts: list[int] = []  # each run's start and end in ``text``, and what the runs before it took out
    ends: list[int] = []
    before: list[int] = []
    previous = removed = 0
    for run in _BLANK_LINES.finditer(text):
        pieces.append(text[previous : run.start() + 2])
        starts.append(run.start())
        ends.append(run.end())
        before.append(removed)
        removed += len(run.group()) - 2
        previous = run.end()
    pieces.append(text[previous:])
    collapsed = "".join(pieces)
    lead = len(collapsed) - len(collapsed.lstrip())

    def moved(at: int) -> int:
        i = bisect.bisect_left(ends, at)  # the first run ending at or after ``at``
        if i == len(ends):
            at -= removed
        elif starts[i] < at:  # in the run, or at its end
            at = starts[i] + 2 - before[i]
        else:
            at -= before[i]
        return max(at - lead, 0)

    return collapsed.strip(), tuple(Heading(moved(h.start), h.level, h.text) for h in headings)


# Noncharacters (never in interchange text) mark where a heading's text starts (one per level) and ends while
# the visible text is assembled; they are taken out, and their places recorded, once the text is laid out.
_HEADING_START = {f"h{n}": chr(0xFDD0 + n) for n in range(1, 7)}
_HEADING_END = "\uFDDF"
_SENTINELS = frozenset(_HEADING_START.values()) | {_HEADING_END}
_SENTINEL_RE = re.compile("[\uFDD1-\uFDD6\uFDDF]")
_EMPTY_HEADING = re.compile("[\uFDD1-\uFDD6]\uFDDF")


def _strip_keeping_marks(line: str) -> str:
    """``line.strip()``, the heading marks among the stripped characters kept at the ends (an empty heading's
    pair dropped), so that stripping moves no mark into or out of its heading's text."""
    start, end = 0, len(line)
    while start < end and (line[start].isspace() or line[start] in _SENTINELS):
        start += 1
    while end > start and (line[end - 1].isspace() or line[end - 1] in _SENTINELS):
        end -= 1
    stripped = _marks(line[:start]) + line[start:end] + _marks(line[end:])
    while True:
        emptied = _EMPTY_HEADING.sub("", stripped)
        if emptied == stripped:
            return stripped
        stripped = emptied


def _marks(part: str) -> str:
    return "".join(c for c in part if c in _SENTINELS)


def _take_out_marks(marked: str) -> tuple[str, tuple[Heading, ...]]:
    pieces: list[str] = []
    spans: list[tuple[int, int, int]] = []  # (level, start, end) in the text without marks
    open_at: list[tuple[int, int]] = []  # (level, start)
    length = previous = 0
    for mark in _SENTINEL_RE.finditer(marked):
        pieces.append(marked[previous : mark.start()])
        length += mark.start() - previous
        previous = mark.end()
        if mark.group() != _HEADING_END:
            open_at.append((ord(mark.group()) - 0xFDD0, length))
        elif open_at:
            level, start = open_at.pop()
            if not open_at:  # a heading inside a heading (invalid HTML) is part of the outer one
                spans.append((level, start, length))
    pieces.append(marked[previous:])
    text = "".join(pieces)
    found = []
    for level, start, end in spans:
        words = " ".join(text[start:end].split())
        if words:
            found.append(Heading(text.rfind("\n", 0, start) + 1, level, words))
    return text, tuple(found)
