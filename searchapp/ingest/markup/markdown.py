"""Markdown read as a reader sees it: CommonMark/GFM with the mkdocs/pymdown, GitHub and Docusaurus extensions
that documentation folders use, its markup blanked in place (same length, newlines kept; see ``blanks``).

A line-based reader. Each line first walks the open containers (block quotes, indented containers: list items,
admonitions, content tabs, mkdocstrings options; delimited containers: ``/// name`` and Docusaurus ``:::name``
blocks), then the container rules (``_CONTAINER_RULES``) may open more on what is left of the line, then the first
leaf rule that applies (``_LEAF_RULES``) reads it. Paragraphs, headings' text and titles are kept as stretches and
their inline markup read at the end (``inline.blank_inline``), once every reference definition is known.

Code stays as it is: the lines of a fenced or indented code block, and code spans' text, are never read as markup
(only a code block's fence lines are blanked). Blanked besides inline markup: front matter, HTML comments,
heading ``#``s and setext underlines, thematic breaks, block-quote ``>``s and GitHub alert markers, bullet
characters and task boxes (ordered list numbers are kept: a reader sees them), admonition/tab/block markers and
types (their titles and labels are kept), reference definitions, snippet includes, table delimiter rows and
pipes, mkdocstrings options (the members they list are kept).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from searchapp.ingest.markup.blanks import Blanks, Reading
from searchapp.ingest.markup.inline import blank_inline, normalise_label

_LINK_TITLE = r"(?:\"[^\"\n]{0,2048}\"|'[^'\n]{0,2048}'|\([^()\n]{0,2048}\))"
# _REFERENCE, _SLASH_BLOCK and _COLON_BLOCK are matched up to the line's last character that is not a space or a
# tab (``_trimmed``), and no blanks are read by two parts of one pattern: a pattern ending in "[ \t]*$" after
# something that may also read blanks ("(.*?)", an optional part after "[ \t]*") tries every way of sharing a run
# of blanks between them, quadratic in its length.
_REFERENCE = re.compile(
    r"\[((?:[^\[\]\\]|\\.){1,999})\]:[ \t]*"
    r"(?:(?:<[^<>\n]{0,2048}>|[^\s<>]{1,2048})(?:[ \t]+" + _LINK_TITLE + r")?|(?<=[ \t])" + _LINK_TITLE + r")?$"
)
_FOOTNOTE = re.compile(r"\[\^[^\]\s]{1,64}\]:[ \t]?")
_LIST_ITEM = re.compile(r"(?:[-*+]|([0-9]{1,9})[.)])(?:([ \t]{1,4})|$)")
_TASK = re.compile(r"\[[ xX]\][ \t]")
_ADMONITION = re.compile(r"(?:!!!|\?\?\?\+?)[ \t]*[\w-]")
_TAB = re.compile(r"===[+!]?[ \t]+\"")
_API = re.compile(r":::[ \t]+[\w.]+[ \t]*$")
_SLASH_BLOCK = re.compile(r"(/{3,})[ \t]*(?:([\w-]+)[ \t]*)?(?:\|[ \t]*(.*))?$")
_COLON_BLOCK = re.compile(r"(:{3,})([A-Za-z][\w-]*)(?:\[(.*)\]|\{[^{}]{0,512}\}|[ \t]+(.*))?$")
_SNIPPET = re.compile(r";?-{2,}8<-{2,}[ \t]*(.*)$")
_ALERT = re.compile(r"\[!(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION)\][ \t]*$", re.IGNORECASE)
_OPTION = re.compile(r"[\w-]+:(?:[ \t]|$)")
_OPTION_ITEM = re.compile(r"-[ \t]+[\w-]+:(?:[ \t]|$)")
# What may start a block in the middle of a paragraph: a line that does is not a lazy continuation.
_STARTS_BLOCK = re.compile(
    r"(?:>|#{1,6}(?:[ \t]|$)|`{3}|~{3}|[-*+][ \t]|1[.)][ \t]|!!!|\?\?\?|===[+!]?[ \t]|/{3}|:{3}|<!--"
    r"|(?:[-*_][ \t]*){3,}$)"
)
_BLANKS = re.compile(r"[ \t]*")
_FENCE_RUN = re.compile(r"`+|~+")
_TAB_WIDTH = 4
# Containers nest this deep at most (deeper markers are text): every line walks the open containers.
_MAX_DEPTH = 32


@dataclass
class _Container:
    kind: str  # "quote", "indent" or "delimited"
    indent: int = 0  # "indent": the column its content starts at
    closer: str = ""  # "delimited": the line that closes it
    lazy: bool = False  # a paragraph in it continues on lines without its prefix (lists and quotes)
    options: bool = False  # mkdocstrings options: its lines are configuration


@dataclass
class _Line:
    start: int  # where the line starts in the text
    end: int  # where it ends (its newline, or the end of the text)
    pos: int  # where what the containers leave of it starts
    col: int  # that position's column
    rest: int = 0  # the first non-blank character at or after pos (end when none)
    extra: int = 0  # columns of indentation from pos to rest (exact up to 3; 4 or more: at least 4)
    blanks_from: int = -1  # [blanks_from, rest) is known to be spaces and tabs: measured once, not per container


@dataclass
class _Paragraph:
    start: int
    end: int
    depth: int
    line_start: int
    lines: int = 1
    table: bool = False


@dataclass
class _Reader:
    text: str
    blanks: Blanks
    containers: list[_Container] = field(default_factory=list)
    paragraph: _Paragraph | None = None
    fence: tuple[str, int, int] | None = None  # (marker character, length, container depth)
    indented_code: int | None = None  # container depth of the indented code block in progress
    snippets: bool = False  # inside a --8<-- block of file names
    block_options: bool = False  # just under a /// block's opening line: indented "key: value" lines are options
    comment_end: int = -1  # an HTML comment block runs to here
    no_comment_end: bool = False
    stretches: list[tuple[int, int, bool]] = field(default_factory=list)
    references: set[str] = field(default_factory=set)
    title: int | None = None
    declared_title: str | None = None  # front matter's "title", which a site shows before any heading

    # --- helpers ----------------------------------------------------------------------------------------

    def measure(self, line: _Line) -> None:
        """Set ``line.rest`` and ``line.extra`` from ``line.pos``."""
        text, i, col = self.text, line.pos, line.col
        if not 0 <= line.blanks_from <= i <= line.rest:
            line.blanks_from = i
            line.rest = _BLANKS.match(text, i, line.end).end()  # type: ignore[union-attr]  # matches ""
        if line.rest - i >= 4:  # 4 columns or more, whatever the tabs: only "3 or less" is told apart
            line.extra = line.rest - i
            return
        while i < line.rest:
            col = col + _TAB_WIDTH - col % _TAB_WIDTH if text[i] == "\t" else col + 1
            i += 1
        line.extra = col - line.col

    def close_paragraph(self) -> None:
        if self.paragraph is not None:
            self.stretches.append((self.paragraph.start, self.paragraph.end, self.paragraph.table))
            self.paragraph = None

    def close_containers(self, depth: int) -> None:
        if depth < len(self.containers):
            self.close_paragraph()
            del self.containers[depth:]
            if self.fence is not None and self.fence[2] > depth:
                self.fence = None
            if self.indented_code is not None and self.indented_code > depth:
                self.indented_code = None

    def stretch(self, start: int, end: int) -> None:
        """Inline markup to be read in ``[start, end)``."""
        self.stretches.append((start, end, False))

    def heading(self, line_start: int, level: int, start: int, end: int, atx: bool = False) -> None:
        # The title is the first level-1 ATX heading outside any container (the rule before markup was read).
        if self.title is None and atx and level == 1 and not self.containers:
            self.title = self.blanks.heading_count
        self.blanks.heading(line_start, level, start, end)
        self.stretch(start, end)

    # --- the walk ---------------------------------------------------------------------------------------

    def read(self) -> None:
        text = self.text
        start, self.declared_title = _front_matter(text, self.blanks)
        while start <= len(text):
            end = text.find("\n", start)
            if end < 0:
                end = len(text)
            if start < end or end < len(text):
                self.line(_Line(start, end, start, 0))
            start = end + 1
        self.close_containers(0)
        self.close_paragraph()

    def line(self, line: _Line) -> None:
        if line.start < self.comment_end:
            return
        matched = self.match_containers(line)
        self.measure(line)
        blank = line.rest == line.end
        if matched < len(self.containers):
            unmatched = self.containers[matched:]
            if blank:
                self.close_containers(matched + next((i for i, c in enumerate(unmatched) if c.kind == "quote"),
                                                     len(unmatched)))
            elif self.paragraph is not None and self.fence is None and all(c.lazy for c in unmatched) \
                    and not self.starts_block(line):
                self.continue_paragraph(line)
                return
            else:
                self.close_containers(matched)
        if self.fence is not None:
            self.fenced_line(line)
            return
        if self.indented_code is not None:
            if blank or (line.extra >= 4 and self.indented_code == len(self.containers)):
                return
            self.indented_code = None
        if self.block_options:
            self.block_options = line.extra >= 4 and _OPTION.match(self.text, line.rest, line.end) is not None
            if self.block_options:
                self.blanks.blank(line.rest, line.end)
                return
        if self.snippets:
            self.blanks.blank(line.rest, line.end)
            self.snippets = _SNIPPET.match(self.text, line.rest, line.end) is None
            return
        if not (self.containers and self.containers[-1].options):
            while self.open_container(line):
                if line.pos >= line.end:  # the marker line of an admonition, tab or block: nothing left
                    return
                self.measure(line)
        for rule in _LEAF_RULES:
            if rule(self, line):
                break

    def match_containers(self, line: _Line) -> int:
        text = self.text
        for depth, container in enumerate(self.containers):
            if container.kind == "quote":
                self.measure(line)
                if line.extra <= 3 and line.rest < line.end and text[line.rest] == ">":
                    self.blanks.blank(line.rest, line.rest + 1)
                    line.col += line.extra + 1
                    line.pos = line.rest + 1
                    if line.pos < line.end and text[line.pos] == " ":
                        line.pos += 1
                        line.col += 1
                    continue
                return depth
            if container.kind == "indent":
                self.measure(line)
                if line.rest == line.end:
                    continue
                i, col = line.pos, line.col
                while col < container.indent and i < line.end and text[i] in " \t":
                    col = col + _TAB_WIDTH - col % _TAB_WIDTH if text[i] == "\t" else col + 1
                    i += 1
                if col < container.indent:
                    return depth
                line.pos, line.col = i, col
        return len(self.containers)

    def starts_block(self, line: _Line) -> bool:
        return line.extra <= 3 and _STARTS_BLOCK.match(self.text, line.rest, line.end) is not None

    def continue_paragraph(self, line: _Line) -> None:
        paragraph = self.paragraph
        assert paragraph is not None
        if paragraph.table and "|" not in self.text[line.rest : line.end]:
            self.close_paragraph()
            self.paragraph = _Paragraph(line.rest, line.end, len(self.containers), line.start)
            return
        paragraph.end = line.end
        paragraph.lines += 1

    def fenced_line(self, line: _Line) -> None:
        assert self.fence is not None
        marker, length, _ = self.fence
        text = self.text
        fence = _FENCE_RUN.match(text, line.rest, line.end)
        run = line.rest if fence is None or text[line.rest] != marker else fence.end()
        if run - line.rest >= length and not text[run : line.end].strip():
            self.blanks.blank(line.rest, line.end)
            self.fence = None

    def open_container(self, line: _Line) -> bool:
        if line.rest == line.end or line.extra > 3 or len(self.containers) >= _MAX_DEPTH:
            return False
        for rule in _CONTAINER_RULES:
            if rule(self, line):
                self.close_paragraph()
                return True
        return False


def _trimmed(text: str, start: int, end: int) -> int:
    """``end`` moved back over the spaces and tabs that end ``text[start:end]``."""
    return start + len(text[start:end].rstrip(" \t"))


def _front_matter(text: str, blanks: Blanks) -> tuple[int, str | None]:
    """Blank YAML (``---``) or TOML (``+++``) front matter at the very start; return where the body starts and
    the one-line ``title`` it declares (Docusaurus, Hugo, Jekyll and mkdocs take a page's title from there)."""
    for opener, closers in (("---", ("---", "...")), ("+++", ("+++",))):
        first = text.find("\n")
        if first < 0 or text[:first].rstrip() != opener:
            continue
        start = first + 1
        title: str | None = None
        while start < len(text):
            end = text.find("\n", start)
            end = len(text) if end < 0 else end
            line = text[start:end].rstrip()
            if line in closers:
                blanks.blank(0, end)
                return end + 1, title
            declared = _TITLE_LINE.match(line)
            if declared and title is None:
                title = _unquote(declared.group(1))
            start = end + 1
    return 0, None


# A top-level title key, YAML (``title: x``) or TOML (``title = "x"``); a block scalar (``|``, ``>``) is not read.
_TITLE_LINE = re.compile(r"title\s*[:=]\s*([^|>\s].*)$")


def _unquote(value: str) -> str | None:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return " ".join(value.split()) or None


# --- container rules: each opens a container on what is left of the line, or returns False ---------------


def _quote(r: _Reader, line: _Line) -> bool:
    if r.text[line.rest] != ">":
        return False
    r.blanks.blank(line.rest, line.rest + 1)
    line.col += line.extra + 1
    line.pos = line.rest + 1
    if line.pos < line.end and r.text[line.pos] == " ":
        line.pos += 1
        line.col += 1
    r.containers.append(_Container("quote", lazy=True))
    return True


def _list_item(r: _Reader, line: _Line) -> bool:
    item = _LIST_ITEM.match(r.text, line.rest, line.end)
    if item is None or _thematic(r.text, line.rest, line.end):
        return False
    empty = item.group(2) is None
    number = item.group(1)
    if r.paragraph is not None and (empty or (number is not None and number != "1")):
        return False  # what cannot interrupt a paragraph continues it
    marker_end = item.end(1) + 1 if number is not None else line.rest + 1
    if number is None:
        r.blanks.blank(line.rest, marker_end)
    spaces = 1 if empty else len(item.group(2))
    line.col += line.extra + (marker_end - line.rest) + spaces
    line.pos = item.end()
    r.containers.append(_Container("indent", indent=line.col, lazy=True))
    task = _TASK.match(r.text, line.pos, line.end)
    if task is not None:
        r.blanks.blank(task.start(), task.end() - 1)
    return True


def _titled_marker(r: _Reader, line: _Line, marker_end: int) -> None:
    """An admonition's or tab's line: the marker and type blanked, a quoted title kept (as inline text)."""
    text = r.text
    opening = text.find('"', marker_end, line.end)
    closing = text.rfind('"', marker_end, line.end)
    if 0 <= opening < closing:
        r.blanks.blank(line.rest, opening + 1)
        r.blanks.blank(closing, line.end)
        r.stretch(opening + 1, closing)
    else:
        r.blanks.blank(line.rest, line.end)
    r.containers.append(_Container("indent", indent=line.col + line.extra + 4))
    line.pos = line.end


def _admonition(r: _Reader, line: _Line) -> bool:
    if _ADMONITION.match(r.text, line.rest, line.end) is None:
        return False
    _titled_marker(r, line, line.rest + 3)
    return True


def _tab(r: _Reader, line: _Line) -> bool:
    if _TAB.match(r.text, line.rest, line.end) is None:
        return False
    _titled_marker(r, line, line.rest + 3)
    return True


def _api(r: _Reader, line: _Line) -> bool:
    """A mkdocstrings stub ``::: package.name``: the name kept, its indented options read as configuration."""
    if _API.match(r.text, line.rest, line.end) is None:
        return False
    r.blanks.blank(line.rest, line.rest + 3)
    r.containers.append(_Container("indent", indent=line.col + line.extra + 4, options=True))
    line.pos = line.end
    return True


def _delimited(r: _Reader, line: _Line) -> bool:
    """``/// name | Title`` ... ``///`` (pymdown blocks) and ``:::name[Title]`` ... ``:::`` (Docusaurus)."""
    text = r.text
    trimmed = _trimmed(text, line.rest, line.end)
    block = _SLASH_BLOCK.match(text, line.rest, trimmed)
    if block is None or block.group(2) is None:  # a bare "///" closes, it opens nothing
        block = _COLON_BLOCK.match(text, line.rest, trimmed)
        if block is None:
            return False
    closer = block.group(1)
    r.block_options = closer[0] == "/"
    # The title: after "|" (group 3); in "[...]" (group 3) or after a space (group 4) for Docusaurus.
    title = next((g for g in range(3, block.re.groups + 1) if block.group(g)), None)
    if title is not None:
        r.blanks.blank(line.rest, block.start(title))
        r.blanks.blank(block.end(title), line.end)
        r.stretch(block.start(title), block.end(title))
    else:
        r.blanks.blank(line.rest, line.end)
    r.containers.append(_Container("delimited", closer=closer))
    line.pos = line.end
    return True


_CONTAINER_RULES: tuple[Callable[[_Reader, _Line], bool], ...] = (_quote, _admonition, _tab, _api, _delimited,
                                                                   _list_item)


# --- leaf rules: the first that applies reads the line ---------------------------------------------------


def _blank_line(r: _Reader, line: _Line) -> bool:
    if line.rest < line.end:
        return False
    r.close_paragraph()
    return True


def _options(r: _Reader, line: _Line) -> bool:
    """mkdocstrings options: keys and values blanked, the members listed (``- name``) kept."""
    if not (r.containers and r.containers[-1].options):
        return False
    text = r.text
    if text[line.rest] == "-" and _OPTION_ITEM.match(text, line.rest, line.end) is None:
        r.blanks.blank(line.rest, line.rest + 1)
        comment = text.find("#", line.rest, line.end)
        if comment >= 0:
            r.blanks.blank(comment, line.end)
    else:
        r.blanks.blank(line.rest, line.end)
    return True


def _closer(r: _Reader, line: _Line) -> bool:
    """The closing line of an open delimited block (``///``, ``:::``); blocks opened inside it close too."""
    stripped = r.text[line.rest : line.end].rstrip()
    if not stripped or stripped[0] not in "/:" or stripped.strip(stripped[0]):
        return False
    for depth in range(len(r.containers) - 1, -1, -1):
        if r.containers[depth].kind == "delimited" and r.containers[depth].closer == stripped:
            r.close_containers(depth)
            r.blanks.blank(line.rest, line.end)
            return True
    return False


def _fence(r: _Reader, line: _Line) -> bool:
    text = r.text
    if line.extra > 3 or text[line.rest] not in "`~":
        return False
    marker = text[line.rest]
    run = _FENCE_RUN.match(text, line.rest, line.end).end()  # type: ignore[union-attr]  # text[rest] is one
    if run - line.rest < 3 or (marker == "`" and "`" in text[run : line.end]):
        return False
    r.close_paragraph()
    r.blanks.blank(line.rest, line.end)
    r.fence = (marker, run - line.rest, len(r.containers))
    return True


def _indented_code(r: _Reader, line: _Line) -> bool:
    if line.extra < 4 or r.paragraph is not None:
        return False
    r.indented_code = len(r.containers)
    return True


def _comment(r: _Reader, line: _Line) -> bool:
    """An HTML comment starting a line runs to its ``-->``, whatever lines it spans (unclosed: plain text)."""
    if line.extra > 3 or r.no_comment_end or not r.text.startswith("<!--", line.rest):
        return False
    stop = r.text.find("-->", line.rest + 4)
    if stop < 0:
        r.no_comment_end = True
        return False
    r.close_paragraph()
    r.blanks.blank(line.rest, stop + 3)
    end = r.text.find("\n", stop)
    end = len(r.text) if end < 0 else end
    if r.text[stop + 3 : end].strip():
        r.stretch(stop + 3, end)
    r.comment_end = end
    return True


def _atx(r: _Reader, line: _Line) -> bool:
    text = r.text
    if line.extra > 3 or text[line.rest] != "#":
        return False
    hashes = line.rest + 1
    while hashes < line.end and hashes - line.rest <= 6 and text[hashes] == "#":
        hashes += 1
    level = hashes - line.rest
    if level > 6 or (hashes < line.end and text[hashes] not in " \t"):
        return False
    r.close_paragraph()
    end = _trimmed(text, hashes, line.end)
    closing = hashes + len(text[hashes:end].rstrip("#"))
    if closing == hashes or text[closing - 1] in " \t":
        r.blanks.blank(closing, end)
        end = closing
    r.blanks.blank(line.rest, hashes)
    r.heading(line.start, level, hashes, end, atx=True)
    return True


def _html_heading(r: _Reader, line: _Line) -> bool:
    """A line that is one ``<hN>...</hN>`` element is a heading (mkdocs pages use them inside admonitions)."""
    text = r.text
    if line.extra > 3 or not text.startswith("<h", line.rest) or line.rest + 4 > line.end:
        return False
    level = text[line.rest + 2]
    if level not in "123456" or text[line.rest + 3] not in "> \t":
        return False
    end = _trimmed(text, line.rest, line.end)
    if not text.endswith(f"</h{level}>", line.rest, end):
        return False
    opened = text.find(">", line.rest, end)
    r.close_paragraph()
    r.heading(line.start, int(level), line.rest, end)
    r.blanks.blank(line.rest, opened + 1)
    return True


def _thematic(text: str, start: int, end: int) -> bool:
    stripped = text[start:end].replace(" ", "").replace("\t", "")
    return len(stripped) >= 3 and stripped[0] in "-*_" and stripped == stripped[0] * len(stripped)


def _setext(r: _Reader, line: _Line) -> bool:
    paragraph = r.paragraph
    if paragraph is None or paragraph.table or paragraph.depth != len(r.containers) or line.extra > 3:
        return False
    underline = r.text[line.rest : line.end].rstrip()
    if not underline or underline[0] not in "=-" or underline.strip(underline[0]):
        return False
    r.paragraph = None
    r.heading(paragraph.line_start, 1 if underline[0] == "=" else 2, paragraph.start, paragraph.end)
    r.blanks.blank(line.rest, line.end)
    return True


def _thematic_break(r: _Reader, line: _Line) -> bool:
    if line.extra > 3 or not _thematic(r.text, line.rest, line.end):
        return False
    r.close_paragraph()
    r.blanks.blank(line.rest, line.end)
    return True


def _table_delimiter(r: _Reader, line: _Line) -> bool:
    """The row under a table's header (``| --- | :-: |``): the paragraph above becomes the table's rows."""
    paragraph = r.paragraph
    if paragraph is None or paragraph.lines != 1 or paragraph.depth != len(r.containers):
        return False
    row = r.text[line.rest : line.end].strip()
    if "|" not in row or "-" not in row or row.strip("|:- \t"):
        return False
    if "|" not in r.text[paragraph.start : paragraph.end]:
        return False
    r.blanks.blank(line.rest, line.end)
    paragraph.table = True
    paragraph.end = line.end
    paragraph.lines += 1
    return True


def _reference(r: _Reader, line: _Line) -> bool:
    if line.extra > 3 or r.paragraph is not None or r.text[line.rest] != "[":
        return False
    footnote = _FOOTNOTE.match(r.text, line.rest, line.end)
    if footnote is not None:
        r.blanks.blank(line.rest, footnote.end())
        r.paragraph = _Paragraph(footnote.end(), line.end, len(r.containers), line.start)
        return True
    definition = _REFERENCE.match(r.text, line.rest, _trimmed(r.text, line.rest, line.end))
    if definition is None:
        return False
    r.references.add(normalise_label(definition.group(1)))
    r.blanks.blank(line.rest, line.end)
    return True


def _snippet(r: _Reader, line: _Line) -> bool:
    include = _SNIPPET.match(r.text, line.rest, line.end)
    if include is None or line.extra > 3:
        return False
    r.close_paragraph()
    r.blanks.blank(line.rest, line.end)
    r.snippets = not include.group(1).strip()
    return True


def _alert(r: _Reader, line: _Line) -> bool:
    if not (r.containers and r.containers[-1].kind == "quote") or r.text[line.rest] != "[":
        return False
    if _ALERT.match(r.text, line.rest, line.end) is None:
        return False
    r.blanks.blank(line.rest, line.end)
    return True


def _text(r: _Reader, line: _Line) -> bool:
    if r.paragraph is not None and r.paragraph.depth == len(r.containers):
        r.continue_paragraph(line)
    else:
        r.close_paragraph()
        r.paragraph = _Paragraph(line.rest, line.end, len(r.containers), line.start)
    return True


_LEAF_RULES: tuple[Callable[[_Reader, _Line], bool], ...] = (
    _blank_line, _options, _closer, _fence, _indented_code, _comment, _atx, _html_heading, _setext,
    _thematic_break, _table_delimiter, _reference, _snippet, _alert, _text,
)


def read_markdown(text: str) -> Reading:
    """``text`` with its Markdown markup blanked, its headings (ATX, setext, one-line HTML ``<hN>``; none in
    code), and its title: the first level-1 ATX heading outside any container, as a reader sees it."""
    blanks = Blanks(text)
    reader = _Reader(text, blanks)
    reader.read()
    references = frozenset(reader.references)
    for start, end, table in reader.stretches:
        blank_inline(blanks, start, end, references, table)
    reading = blanks.result(reader.title)
    return replace(reading, title=reader.declared_title) if reader.declared_title else reading
