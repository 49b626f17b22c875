"""HTML: the visible text laid out as a browser shows it, roughly, with the h1-h6 headings where their text lands.
EPUB chapters are read the same way (``epub.py``)."""

from __future__ import annotations

import bisect
import re
from array import array
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchapp.errors import LoadError
from searchapp.ingest.formats import decoding
from searchapp.ingest.formats.decoding import decode_text, normalise_newlines
from searchapp.ingest.formats.format import SPACES, Format, LoadedText, clean_title
from searchapp.ingest.formats.parsers import parser_errors
from searchapp.lines import SourceLines
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
    markup = decode_text(data, name)
    soup = parse_html(name, markup, "HTML")
    titles = (clean_title(tag.get_text()) for tag in (soup.title, soup.find("h1")) if tag is not None)
    title = next((t for t in titles if t), None)
    visible, headings, source_lines = visible_text(soup, markup)
    return LoadedText(visible, title, headings, source_lines)


# Version 1: the text's source lines (where each of its characters is in the file), for hits' lines.
HTML = Format("HTML", (".html", ".htm"), _load_html, is_text=True, loggers=LOGGERS, version=1)


def parse_html(name: str, markup: str, what: str) -> BeautifulSoup:
    """``markup`` parsed by html.parser, refused (naming ``what``: "HTML", an EPUB's part) when it is longer
    than ``MAX_HTML_CHARS``. html.parser, not an XML parser, for XHTML too: its named entities (``&nbsp;``) need
    no DTD, and a DTD in the file is never read (its entities are not expanded)."""
    from bs4 import BeautifulSoup

    if len(markup) > MAX_HTML_CHARS:
        raise LoadError(name, f"{what} of {len(markup):,} characters, over the {MAX_HTML_CHARS:,} parsed")
    with parser_errors(name, f"cannot parse {what}"):
        return BeautifulSoup(markup, "html.parser")


def visible_text(
    soup: BeautifulSoup, markup: str | None = None
) -> tuple[str, tuple[Heading, ...], SourceLines | None]:
    """Text as a browser lays it out, roughly: blocks on their own lines, whitespace collapsed elsewhere; the
    h1-h6 headings, where their text landed; and, given the ``markup`` ``soup`` was parsed from, the text's source
    lines (``lines.SourceLines``: from which offset of the text on its characters are on which line of the file;
    ``None`` without it). Scripts, styles and the like are taken out of ``soup``, and so is ``<title>``: it is not
    page content (a loader reads the title first).

    Source lines: each tag's start is at its ``sourceline`` (html.parser's), the text after it on the line where its
    start tag's ``>`` is, and a string's characters a line further at each line break it holds (white space is
    collapsed, so the break is gone from the text). A mark (:data:`_LINE_MARK`) goes before the first character that
    is not white space on each new line, while the pieces are laid out; every later step keeps the characters that
    are not white space in their order and moves no mark off its character, so the marks are taken out at the end
    with the headings' and their places are the lines'. Where the count slips (until the next tag sets it again): a
    line break inside an end tag is missed, and one written as an entity (``&#10;``) counts as the file's.
    """
    from bs4.element import NavigableString, PageElement, PreformattedString, Tag

    lines_of = _SourceLines(markup) if markup is not None else None
    resume: dict[int, int] = {}  # the line of the string after a hidden element, by the string's id()
    for tag in soup.find_all(_HIDDEN_TAGS):
        if lines_of is not None and not getattr(tag, "decomposed", False):
            after = tag.next_sibling
            if isinstance(after, NavigableString):
                resume[id(after)] = lines_of.after(tag)
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
            if lines_of is not None:
                lines_of.tag(node)
            if node.name == "br":
                pieces.append("\n")
            elif node.name == "pre":
                text = normalise_newlines(_SENTINEL_RE.sub("", node.get_text()))
                pieces.append(f"\n{text if lines_of is None else lines_of.marked(text)}\n")
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
            text = _SENTINEL_RE.sub("", str(node))
            if lines_of is not None:
                lines_of.line = resume.get(id(node), lines_of.line)
                text = lines_of.marked(text)
            pieces.append(SPACES.sub(" ", text))
        elif isinstance(node, PreformattedString) and lines_of is not None:
            lines_of.line += str(node).count("\n")
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
    text, headings, marks = _take_out_marks("\n".join(lines))
    text, headings, marks = _collapse_blank_lines(text, headings, marks)
    if lines_of is None:
        return text, headings, None
    return text, headings, tuple(zip(marks, lines_of.lines, strict=True))


# Marks the first character of a new source line while the text is laid out (a noncharacter, as the headings').
_LINE_MARK = "\uFDE0"
_LINE_BREAK = re.compile(r"\n")


class _SourceLines:
    """The source line of the next character as a document's markup is walked in order (:func:`visible_text`):
    each line break of a string moves it on, each tag sets it where its start tag ends; ``lines``, the line of
    each mark put in the text so far. Linear: each tag's start tag is read once, each string once."""

    def __init__(self, markup: str) -> None:
        self.markup = markup
        # Where each line starts: 8 bytes a line in an array; a list holds a 28-byte int and a pointer for each,
        # 1.1 GB for a 32 M-character file of line breaks.
        self.starts = array("q", [0])
        self.starts.extend(m.end() for m in _LINE_BREAK.finditer(markup))
        self.lines = array("q")
        self.line = 1

    def tag(self, tag: Any) -> None:
        """The text after ``tag``'s start tag is on the line where that ends (its first ``>``)."""
        line, column = getattr(tag, "sourceline", None), getattr(tag, "sourcepos", None)
        if not isinstance(line, int) or not isinstance(column, int) or not 1 <= line <= len(self.starts):
            return
        at = self.starts[line - 1] + column
        end = self.markup.find(">", at)
        self.line = line + self.markup.count("\n", at, end if end >= 0 else at)

    def after(self, tag: Any) -> int:
        """The line just after ``tag``, an element whose text is not shown (a script): where its start tag ends and
        as many lines on as its text holds line breaks. The line goes on from before it."""
        line = self.line
        self.tag(tag)
        line, self.line = self.line + tag.get_text().count("\n"), line
        return line

    def marked(self, text: str) -> str:
        """``text`` (a string as written, or a ``<pre>``'s text) with a mark before its first character that is
        not white space on each line where the source line is not the last mark's; the line moved on past it."""
        if "\n" not in text and self.lines and self.lines[-1] == self.line:
            return text  # most strings: on the last mark's line
        parts = text.split("\n")
        for i, part in enumerate(parts):
            if i:
                self.line += 1
            body = part.lstrip()
            if body and (not self.lines or self.lines[-1] != self.line):
                self.lines.append(self.line)
                parts[i] = part[: len(part) - len(body)] + _LINE_MARK + body
        return "\n".join(parts)


_BLANK_LINES = re.compile(r"\n{3,}")


def _collapse_blank_lines(
    text: str, headings: tuple[Heading, ...], marks: list[int]
) -> tuple[str, tuple[Heading, ...], list[int]]:
    """``text`` with each run of blank lines cut to one and its ends stripped, and ``headings`` moved with their
    lines (one whose line was cut, a blank one, moves to the line after the run), and the offsets ``marks`` with
    their characters (none is white space)."""
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

    return (collapsed.strip(), tuple(Heading(moved(h.start), h.level, h.text) for h in headings),
            [moved(at) for at in marks])


# Noncharacters (never in interchange text) mark where a heading's text starts (one per level) and ends while
# the visible text is assembled; they are taken out, and their places recorded, once the text is laid out.
_HEADING_START = {f"h{n}": chr(0xFDD0 + n) for n in range(1, 7)}
_HEADING_END = "\uFDDF"
_SENTINELS = frozenset(_HEADING_START.values()) | {_HEADING_END}
_SENTINEL_RE = re.compile("[\uFDD1-\uFDD6\uFDDF\uFDE0]")  # the line mark too
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


def _take_out_marks(marked: str) -> tuple[str, tuple[Heading, ...], list[int]]:
    """``marked`` without its marks: the headings they enclose, and where each line mark was (text offsets)."""
    pieces: list[str] = []
    lines: list[int] = []
    spans: list[tuple[int, int, int]] = []  # (level, start, end) in the text without marks
    open_at: list[tuple[int, int]] = []  # (level, start)
    length = previous = 0
    for mark in _SENTINEL_RE.finditer(marked):
        pieces.append(marked[previous : mark.start()])
        length += mark.start() - previous
        previous = mark.end()
        if mark.group() == _LINE_MARK:
            lines.append(length)
        elif mark.group() != _HEADING_END:
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
    return text, tuple(found), lines
