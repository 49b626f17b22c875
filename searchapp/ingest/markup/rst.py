"""reStructuredText read as a reader sees it (same-length blanking, see ``blanks``).

Section titles (underlined, or over- and underlined) are headings, their level the order in which each
adornment style first appears; the first, when it is of the first style, is the title. Line rules
(``_LINE_RULES``) read explicit markup (``.. directive::`` markers, comments, targets, footnotes, substitution
definitions), bullets, field and line-block markers and table borders; literal blocks (after ``::``), code
directives' content and doctest blocks stay as they are. Inline: roles and interpreted text keep their text
(``:class:`~a.B``` reads ``a.B``; ```text <url>`_`` reads ``text``), inline literals keep theirs, reference and
footnote markers, substitution pipes, escapes and paired ``*``/``**`` are blanked.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from searchapp.ingest.markup.blanks import Blanks, Reading, pair_delimiters

_ADORNMENT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_DIRECTIVE = re.compile(r"\.\.[ \t]+(?:\|[^|\n]{1,256}\|[ \t]+)?([\w:.+-]{1,64})::(?=[ \t]|$)")
_TARGET = re.compile(r"\.\.[ \t]+_|__[ \t]")
_FOOTNOTE = re.compile(r"\.\.[ \t]+\[(?:#?[\w.-]{0,64}|\*)\](?=[ \t]|$)")
_BULLET = re.compile(r"[-*+\u2022\u2023\u2043](?:[ \t]|$)")
_FIELD = re.compile(r":(?![ \t])[^:`\n]{1,128}(?<![ \t]):(?=[ \t]|$)")
_GRID_BORDER = re.compile(r"\+(?:[-=:]{1,4096}\+){1,256}[ \t]*$")
_SIMPLE_BORDER = re.compile(r"(?:=+|-+)(?:[ \t]+(?:=+|-+))+[ \t]*$")
# Directives whose content is code (kept as it is) and whose arguments are not words (languages, paths).
_CODE_DIRECTIVES = frozenset(
    "code code-block sourcecode doctest testcode testsetup testcleanup testoutput raw math productionlist"
    " parsed-literal literalinclude highlight".split()
)
_HIDDEN_DIRECTIVES = frozenset("toctree contents sectnum include image figure only".split())
_PATH_ARGUMENTS = _CODE_DIRECTIVES | _HIDDEN_DIRECTIVES
_ROLE = re.compile(r":[\w.+-]{1,64}(?::[\w.+-]{1,64})?:$")
_ROLE_AFTER = re.compile(r":[\w.+-]{1,64}(?::[\w.+-]{1,64})?:")
_SUBSTITUTION = re.compile(r"(?<![\w|])\|(?![ \t|])[^|\n]{1,256}(?<![ \t])\|(?:__?)?(?![\w|])")
_FOOTNOTE_REF = re.compile(r"\[(?:#[\w.-]{0,64}|\*|[0-9]{1,9}|[\w.-]{1,64})\]_")
# A reference name's trailing underscores (``name_``, ``Two words`_`` aside): ``_named_references`` finds them.
_NAME_START = re.compile(r"(?<!\w)[A-Za-z0-9]")
_NAME_END = re.compile(r"(?<!_)_+(?!\w)")
_NOT_NAME = re.compile(r"[^\w.-]")
_NAME_LENGTH = 256
_STARS = re.compile(r"\*+")


@dataclass
class _Reader:
    text: str
    blanks: Blanks
    lines: list[tuple[int, int]]
    styles: list[tuple[str, bool]] = field(default_factory=list)
    stretches: list[tuple[int, int]] = field(default_factory=list)
    block_indent: int | None = None  # a literal, code or hidden block: lines indented more than this are in it
    block_hidden: bool = False
    paragraph: list[int] | None = None  # [start, end] of the paragraph being read
    title: int | None = None

    def indent(self, i: int) -> int:
        start, end = self.lines[i]
        line = self.text[start:end]
        return len(line) - len(line.lstrip(" \t")) if line.strip() else -1

    def content(self, i: int) -> str:
        start, end = self.lines[i]
        return self.text[start:end].strip()

    def adornment(self, i: int) -> str | None:
        """The adornment character when line ``i`` is one repeated punctuation character, unindented."""
        if not 0 <= i < len(self.lines) or self.indent(i) != 0:
            return None
        line = self.content(i)
        if len(line) >= 2 and line[0] in _ADORNMENT and line == line[0] * len(line):
            return line[0]
        return None

    def close_paragraph(self) -> None:
        if self.paragraph is not None:
            self.stretches.append((self.paragraph[0], self.paragraph[1]))
            self.paragraph = None

    def start_block(self, indent: int, hidden: bool) -> None:
        self.block_indent, self.block_hidden = indent, hidden

    def heading(self, line: int, char: str, overlined: bool) -> None:
        style = (char, overlined)
        if style not in self.styles:
            self.styles.append(style)
        level = self.styles.index(style) + 1
        if self.blanks.heading_count == 0 and level == 1:
            self.title = 0
        start, end = self.lines[line]
        self.blanks.heading(start, level, start, end)
        self.stretches.append((start, end))

    def read(self) -> None:
        i = 0
        while i < len(self.lines):
            i = self.line(i)
        self.close_paragraph()

    def line(self, i: int) -> int:
        start, end = self.lines[i]
        indent = self.indent(i)
        if self.block_indent is not None:
            if indent < 0 or indent > self.block_indent:
                if indent >= 0 and self.block_hidden:
                    self.blanks.blank(start, end)
                return i + 1
            self.block_indent = None
        if indent < 0:
            self.close_paragraph()
            return i + 1
        for rule in _LINE_RULES:
            advanced = rule(self, i, start + indent, end, indent)
            if advanced:
                return advanced
        return i + 1


def _section(r: _Reader, i: int, rest: int, end: int, indent: int) -> int:
    over = r.adornment(i)
    if over is not None and i + 2 < len(r.lines) and r.adornment(i + 2) == over and r.indent(i + 1) >= 0 \
            and r.adornment(i + 1) is None and len(r.content(i)) >= len(r.content(i + 1)):
        r.close_paragraph()
        r.blanks.blank(*r.lines[i])
        r.blanks.blank(*r.lines[i + 2])
        r.heading(i + 1, over, True)
        return i + 3
    under = r.adornment(i + 1)
    before_blank = i == 0 or r.indent(i - 1) < 0 or r.adornment(i - 1) is not None
    if under is not None and over is None and indent == 0 and before_blank and r.paragraph is None \
            and len(r.content(i + 1)) >= min(len(r.content(i)), 3):
        r.blanks.blank(*r.lines[i + 1])
        r.heading(i, under, False)
        return i + 2
    if over is not None and len(r.content(i)) >= 4:  # a transition
        r.close_paragraph()
        r.blanks.blank(rest, end)
        return i + 1
    return 0


def _explicit(r: _Reader, i: int, rest: int, end: int, indent: int) -> int:
    text = r.text
    if not text.startswith("..", rest) and not text.startswith("__ ", rest):
        return 0
    r.close_paragraph()
    directive = _DIRECTIVE.match(text, rest, end)
    if directive is not None:
        name = directive.group(1).lower().rpartition(":")[2]
        if name in _PATH_ARGUMENTS:
            r.blanks.blank(rest, end)
        else:
            r.blanks.blank(rest, directive.end())
            r.stretches.append((directive.end(), end))
        j = i + 1
        # Options: the field list right under the directive; their names blanked, their values kept.
        while j < len(r.lines) and r.indent(j) > indent:
            start, line_end = r.lines[j]
            option = _FIELD.match(text, start + r.indent(j), line_end)
            if option is None:
                break
            r.blanks.blank(option.start(), option.end())
            if name not in _PATH_ARGUMENTS:
                r.stretches.append((option.end(), line_end))
            else:
                r.blanks.blank(option.end(), line_end)
            j += 1
        if name in _CODE_DIRECTIVES or name in _HIDDEN_DIRECTIVES:
            r.start_block(indent, hidden=name in _HIDDEN_DIRECTIVES)
        return j
    footnote = _FOOTNOTE.match(text, rest, end)
    if footnote is not None:
        r.blanks.blank(rest, footnote.end())
        r.paragraph = [footnote.end(), end]
        return i + 1
    # A target or a comment: the line and what is indented under it.
    r.blanks.blank(rest, end)
    if _TARGET.match(text, rest, end) is None:
        r.start_block(indent, hidden=True)
    return i + 1


def _table(r: _Reader, i: int, rest: int, end: int, indent: int) -> int:
    if _GRID_BORDER.match(r.text, rest, end) is None and _SIMPLE_BORDER.match(r.text, rest, end) is None:
        return 0
    r.close_paragraph()
    r.blanks.blank(rest, end)
    return i + 1


def _doctest(r: _Reader, i: int, rest: int, end: int, indent: int) -> int:
    if not r.text.startswith(">>> ", rest) or r.paragraph is not None:
        return 0
    j = i
    while j < len(r.lines) and r.indent(j) >= 0:
        j += 1
    return j


def _markers(r: _Reader, i: int, rest: int, end: int, indent: int) -> int:
    """Bullets, field-list colons, line-block and grid-row pipes are blanked; the line is then text."""
    text = r.text
    if _BULLET.match(text, rest, end) is not None:
        r.close_paragraph()
        r.blanks.blank(rest, rest + 1)
        rest += 1
    elif (name := _FIELD.match(text, rest, end)) is not None:
        r.close_paragraph()
        r.blanks.blank(rest, rest + 1)
        r.blanks.blank(name.end() - 1, name.end())
    if rest < end and (text.startswith("| ", rest) or (text[rest] == "|" and text[end - 1] == "|")):
        pipe = rest
        while (pipe := text.find("|", pipe, end)) >= 0:
            if pipe == rest or text[pipe - 1] == " " or pipe == end - 1:
                r.blanks.blank(pipe, pipe + 1)
            pipe += 1
    return 0


def _text(r: _Reader, i: int, rest: int, end: int, indent: int) -> int:
    if r.paragraph is None:
        r.paragraph = [rest, end]
    else:
        r.paragraph[1] = end
    stripped = r.text[rest:end].rstrip()
    if stripped.endswith("::"):
        # "Paragraph::" reads "Paragraph:", a lone or spaced "::" nothing; an indented literal block follows.
        colons = rest + len(stripped) - 2
        alone = stripped == "::" or stripped[-3] in " \t"
        r.blanks.blank(colons if alone else colons + 1, colons + 2)
        r.close_paragraph()
        r.start_block(indent, hidden=False)
    return i + 1


_LINE_RULES: tuple[Callable[[_Reader, int, int, int, int], int], ...] = (
    _section, _explicit, _table, _doctest, _markers, _text,
)


def _inline(blanks: Blanks, start: int, end: int) -> None:
    text = blanks.text
    pos = start
    unclosed = ""
    while (found := _LITERAL_START.search(text, pos, end)) is not None:
        i = found.start()
        pos = i + 1
        if text[i] == "\\":
            blanks.blank(i, i + 1)
            blanks.keep(i + 1, i + 2)
            pos = i + 2
            continue
        mark = "``" if text.startswith("``", i) else "`"
        if mark in unclosed:
            continue
        close = text.find(mark, i + len(mark), end)
        if close < 0:
            unclosed += mark
            pos = i + len(mark)
            continue
        blanks.blank(i, i + len(mark))
        blanks.blank(close, close + len(mark))
        pos = close + len(mark)
        if mark == "``":
            blanks.keep(i + 2, close)
            continue
        _interpreted(blanks, i, close, end)
        pos = max(pos, close + 1)
    for pattern in (_SUBSTITUTION, _FOOTNOTE_REF):
        for match in pattern.finditer(text, start, end):
            if not blanks.free(*match.span()):
                continue
            if pattern is _FOOTNOTE_REF:
                blanks.blank(*match.span())
            else:
                body = match.group().rstrip("_")
                blanks.blank(match.start(), match.start() + 1)
                blanks.blank(match.start() + len(body) - 1, match.end())
    for underscores in _named_references(text, start, end):
        if blanks.free(*underscores):
            blanks.blank(*underscores)
    runs = [m.span() for m in _STARS.finditer(text, start, end) if blanks.free(*m.span())]
    pair_delimiters(blanks, runs, intraword=False)


_LITERAL_START = re.compile(r"[\\`]")


def _named_references(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The trailing ``_`` or ``__`` of each reference name in ``text[start:end]`` (``name_``, ``a.b-c__``): a name
    starts with an ASCII letter or digit not after a word character, runs over word characters, dots and hyphens
    (at most 257 of them) and ends with one or two underscores not followed by a word character; names are taken
    leftmost first and do not overlap.

    Linear: a name may start after any dot or hyphen, so a pattern searched at each start would read up to 257
    characters from each (``a.a.a...``); here every start, underscore run and name boundary is found once."""
    ends = [(run.end() - min(2, run.end() - run.start()), run.end())
            for run in _NAME_END.finditer(text, start, end)]  # (where its underscores start, where it ends)
    found: list[tuple[int, int]] = []
    next_end = 0
    boundary = -1  # the first character that no name holds, at or after the last start tried
    pos = start
    while (first := _NAME_START.search(text, pos, end)) is not None:
        name = first.start()
        while next_end < len(ends) and ends[next_end][0] <= name:
            next_end += 1
        if next_end == len(ends):
            break
        if boundary < name:
            outside = _NOT_NAME.search(text, name, end)
            boundary = end if outside is None else outside.start()
        underscores, name_end = ends[next_end]
        if underscores <= boundary and underscores - name - 1 <= _NAME_LENGTH:
            found.append((underscores, name_end))
            pos = name_end
        else:
            pos = name + 1
    return found


def _interpreted(blanks: Blanks, opening: int, closing: int, end: int) -> None:
    """`` `text` `` between ``opening`` and ``closing`` (its backticks, already blanked): a role before or after
    it, a reference's underscores after it, an explicit target ``<...>`` inside it are blanked."""
    text = blanks.text
    role = _ROLE.search(text, max(0, opening - 130), opening)
    if role is not None:
        blanks.blank(role.start(), role.end())
    if opening > 0 and text[opening - 1] == "_":
        blanks.blank(opening - 1, opening)
    after = _ROLE_AFTER.match(text, closing + 1, end)
    if after is not None:
        blanks.blank(after.start(), after.end())
    elif text.startswith("__", closing + 1):
        blanks.blank(closing + 1, closing + 3)
    elif text.startswith("_", closing + 1):
        blanks.blank(closing + 1, closing + 2)
    inner_start = opening + 1
    if inner_start < closing and text[inner_start] in "~!":
        blanks.blank(inner_start, inner_start + 1)
        inner_start += 1
    if closing - 1 > inner_start and text[closing - 1] == ">":
        target = text.rfind("<", inner_start, closing)
        if target > inner_start:
            blanks.blank(target, closing)
        elif target == inner_start:
            blanks.blank(target, target + 1)
            blanks.blank(closing - 1, closing)
    blanks.keep(inner_start, closing)


def read_rst(text: str) -> Reading:
    """``text`` with its reStructuredText markup blanked, its section titles as headings, and its title (the
    first section title, when it is of the first adornment style: docutils' document title)."""
    blanks = Blanks(text)
    lines: list[tuple[int, int]] = []
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        lines.append((start, end))
        start = end + 1
    reader = _Reader(text, blanks, lines)
    reader.read()
    for start, end in reader.stretches:
        _inline(blanks, start, end)
    return blanks.result(reader.title)
