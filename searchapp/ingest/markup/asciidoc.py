"""AsciiDoc read as a reader sees it (same-length blanking, see ``blanks``).

``=`` to ``======`` titles are headings of level the count of ``=`` (``= Title`` is the document title).
Line rules (``_LINE_RULES``) read attribute entries, comments, block delimiters (listing ``----``, literal
``....`` and fenced blocks stay as they are, a ``////`` comment block is blanked), block attribute lines
(``[source,python]``: a paragraph under ``[source]`` stays as it is too), anchors, block titles (``.Title``
keeps its text), admonition labels, list markers, block macros and table pipes. Inline: ``link:url[text]``,
``xref:``, ``image:`` and other macros keep their text, ``url[text]`` keeps text, ``<<id,text>>`` keeps text
(``<<id>>`` the id), monospace and passthrough keep their text literal, paired ``*``, ``_`` and ``#`` are blanked.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from searchapp.ingest.markup.blanks import Blanks, Reading, pair_delimiters

_TITLE = re.compile(r"(={1,6})[ \t]+\S")
_ATTRIBUTE = re.compile(r":!?[\w][\w-]{0,128}!?:(?:[ \t]|$)")
_DELIMITER = re.compile(r"(?:(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,})|(--)|([|,:!]={3,})|(`{3,})[\w+-]*)[ \t]*$")
_BLOCK_ATTRIBUTES = re.compile(r"\[[^\[\]\n]{0,512}\][ \t]*$")
_ANCHOR = re.compile(r"\[\[[^\[\]\n]{1,256}\]\][ \t]*$")
_BLOCK_TITLE = re.compile(r"\.(?=[^.\s])")
_ADMONITION = re.compile(r"(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION):[ \t]")
_LIST = re.compile(r"(?:\*{1,5}|-|\.{1,5})[ \t]+(?:\[[ xX*]\][ \t])?")
_BLOCK_MACRO = re.compile(r"(image|video|audio|include|toc)::([^\[\n]{0,2048})\[([^\]\n]{0,2048})\][ \t]*$")
_CODE_STYLES = re.compile(r"\[(?:source|listing|literal)(?:[,\]])")
# An inline macro is ``name:target[text]`` (``_macros``): its name, then up to 2,048 characters of target without
# white space or brackets, then its text in brackets (up to 2,048 characters, on one line).
_MACRO_NAME = re.compile(
    r"\b(?:link|xref|mailto|image|kbd|btn|menu|footnote|footnoteref|pass|anchor|icon|indexterm2?|https?|ftp|irc):"
)
_MACRO_TARGET_END = re.compile(r"[\s\[\]]")
_MACRO_PART = 2048
_XREF = re.compile(r"<<([^<>,\n]{1,256})(,[^<>\n]{0,512})?>>")
_INLINE_ANCHOR = re.compile(r"\[\[[^\[\]\n]{1,256}\]\]")
_ATTRIBUTE_REF = re.compile(r"\{[\w][\w-]{0,128}\}")
_LITERALS = re.compile(r"\\|`+|\+{1,3}")
_DELIMITER_RUNS = re.compile(r"\*+|_+|#+")
_BLANKS = re.compile(r"[ \t]*")


@dataclass
class _Reader:
    text: str
    blanks: Blanks
    block: list[str] = field(default_factory=list)  # the open delimited blocks' delimiters, innermost last
    tables: int = 0  # how many of them open a table: counted, not searched for at each paragraph's end
    verbatim: str | None = None  # the delimiter closing the listing/literal/comment block in progress
    comment: bool = False
    code_paragraph: bool = False  # a [source] paragraph without delimiters: stays as it is to a blank line
    pending_code: bool = False  # the last line was [source,...]
    paragraph: list[int] | None = None
    stretches: list[tuple[int, int, bool]] = field(default_factory=list)
    title: int | None = None

    def close_paragraph(self) -> None:
        if self.paragraph is not None:
            self.stretches.append((self.paragraph[0], self.paragraph[1], self.in_table()))
            self.paragraph = None

    def in_table(self) -> bool:
        return self.tables > 0

    def line(self, start: int, end: int) -> None:
        text = self.text
        rest = _BLANKS.match(text, start, end).end()  # type: ignore[union-attr]  # matches ""
        if self.verbatim is not None:
            if text[rest:end].rstrip() == self.verbatim:
                self.blanks.blank(rest, end)
                self.verbatim = None
            elif self.comment:
                self.blanks.blank(start, end)
            return
        if self.code_paragraph:
            if rest < end:
                return
            self.code_paragraph = False
        if rest == end:
            self.close_paragraph()
            self.pending_code = False
            return
        for rule in _LINE_RULES:
            if rule(self, start, rest, end):
                return
        self.pending_code = False
        if self.paragraph is None:
            self.paragraph = [rest, end]
        else:
            self.paragraph[1] = end
        if text.endswith(" +", rest, end):  # a hard line break
            self.blanks.blank(end - 1, end)


def _delimiter(r: _Reader, start: int, rest: int, end: int) -> bool:
    delimiter = _DELIMITER.match(r.text, rest, end)
    if delimiter is None or rest != start:
        return False
    r.close_paragraph()
    r.blanks.blank(rest, end)
    marker = r.text[rest:end].rstrip()
    if delimiter.group(4):  # ``` fenced code: closed by the bare fence
        r.verbatim, r.comment = delimiter.group(4), False
    elif (marker[0] in "-." and len(marker) >= 4) or marker[0] == "/":
        r.verbatim, r.comment = marker, marker[0] == "/"
    elif r.block and r.block[-1] == marker:
        r.block.pop()
        r.tables -= _is_table(marker)
    else:
        r.block.append(marker)
        r.tables += _is_table(marker)
    r.pending_code = False
    return True


def _is_table(delimiter: str) -> bool:
    return delimiter.endswith("===") and delimiter[0] in "|,:!"


def _comment(r: _Reader, start: int, rest: int, end: int) -> bool:
    if not r.text.startswith("//", rest) or r.text.startswith("///", rest):
        return False
    r.blanks.blank(rest, end)
    return True


def _attribute(r: _Reader, start: int, rest: int, end: int) -> bool:
    if rest != start or _ATTRIBUTE.match(r.text, rest, end) is None:
        return False
    r.close_paragraph()
    r.blanks.blank(rest, end)
    return True


def _section(r: _Reader, start: int, rest: int, end: int) -> bool:
    title = _TITLE.match(r.text, rest, end)
    if title is None or rest != start or r.paragraph is not None or r.block:
        return False
    level = len(title.group(1))
    content_end = rest + len(r.text[rest:end].rstrip(" \t="))
    if r.title is None and level == 1:
        r.title = r.blanks.heading_count
    r.blanks.blank(rest, title.end() - 1)
    r.blanks.blank(content_end, end)
    r.blanks.heading(start, level, title.end() - 1, content_end)
    r.stretches.append((title.end() - 1, content_end, False))
    return True


def _block_attributes(r: _Reader, start: int, rest: int, end: int) -> bool:
    text = r.text
    if text[rest] != "[" or r.paragraph is not None:
        return False
    if _ANCHOR.match(text, rest, end) is None and _BLOCK_ATTRIBUTES.match(text, rest, end) is None:
        return False
    r.blanks.blank(rest, end)
    r.pending_code = _CODE_STYLES.match(text, rest, end) is not None
    return True


def _code_paragraph(r: _Reader, start: int, rest: int, end: int) -> bool:
    if not r.pending_code:
        return False
    r.pending_code = False
    r.code_paragraph = True
    return True


def _block_title(r: _Reader, start: int, rest: int, end: int) -> bool:
    if rest != start or r.paragraph is not None or _BLOCK_TITLE.match(r.text, rest, end) is None:
        return False
    if _LIST.match(r.text, rest, end) is not None:
        return False
    r.blanks.blank(rest, rest + 1)
    r.stretches.append((rest + 1, end, False))
    return True


def _block_macro(r: _Reader, start: int, rest: int, end: int) -> bool:
    macro = _BLOCK_MACRO.match(r.text, rest, end)
    if macro is None:
        return False
    r.close_paragraph()
    if macro.group(1) in ("image", "video", "audio") and macro.group(3):
        r.blanks.blank(rest, macro.start(3))
        r.blanks.blank(macro.end(3), end)
        r.stretches.append((macro.start(3), macro.end(3), False))
    else:
        r.blanks.blank(rest, end)
    return True


def _markers(r: _Reader, start: int, rest: int, end: int) -> bool:
    """Admonition labels and list markers are blanked; the line is then read as text (returns False)."""
    text = r.text
    label = _ADMONITION.match(text, rest, end)
    if label is not None:
        r.close_paragraph()
        r.blanks.blank(rest, label.end())
        return False
    item = _LIST.match(text, rest, end)
    if item is not None:
        r.close_paragraph()
        r.blanks.blank(rest, item.end())
    return False


_LINE_RULES: tuple[Callable[[_Reader, int, int, int], bool], ...] = (
    _delimiter, _comment, _attribute, _section, _block_attributes, _code_paragraph, _block_title, _block_macro,
    _markers,
)


def _inline(blanks: Blanks, start: int, end: int, table: bool) -> None:
    text = blanks.text
    pos = start
    unclosed: set[str] = set()
    while (found := _LITERALS.search(text, pos, end)) is not None:
        i, mark_end = found.span()
        mark = found.group()
        pos = mark_end
        if mark == "\\":
            blanks.blank(i, i + 1)
            blanks.keep(i + 1, i + 2)
            pos = i + 2
            continue
        if mark in unclosed or len(mark) > 2 and mark[0] == "`":
            continue
        close = text.find(mark, mark_end, end)
        if close < 0 or close == mark_end:
            unclosed.add(mark)
            continue
        blanks.blank(i, mark_end)
        blanks.blank(close, close + len(mark))
        blanks.keep(mark_end, close)
        pos = close + len(mark)
    for macro, target, opening, closing in _macros(text, start, end):
        if not blanks.free(macro, closing + 1):
            continue
        if closing > opening + 1:
            blanks.blank(macro, opening + 1)
            blanks.blank(closing, closing + 1)
        elif text.startswith(("link:", "mailto:", "http", "ftp", "irc"), macro):
            # link:url[] shows its address
            blanks.blank(macro, target if text.startswith(("link:", "mailto:"), macro) else macro)
            blanks.blank(opening, closing + 1)
        else:
            blanks.blank(macro, closing + 1)
    for match in _XREF.finditer(text, start, end):
        if not blanks.free(*match.span()):
            continue
        if match.group(2):
            blanks.blank(match.start(), match.start(2) + 1)
        else:
            blanks.blank(match.start(), match.start() + 2)
        blanks.blank(match.end() - 2, match.end())
    for pattern in (_INLINE_ANCHOR, _ATTRIBUTE_REF):
        for match in pattern.finditer(text, start, end):
            if blanks.free(*match.span()):
                if pattern is _INLINE_ANCHOR:
                    blanks.blank(*match.span())
                else:
                    blanks.blank(match.start(), match.start() + 1)
                    blanks.blank(match.end() - 1, match.end())
    if table:
        for pipe in re.finditer(r"\|", text[start:end]):
            if blanks.usable(start + pipe.start()):
                blanks.blank(start + pipe.start(), start + pipe.end())
    runs = [m.span() for m in _DELIMITER_RUNS.finditer(text, start, end) if blanks.free(*m.span())]
    pair_delimiters(blanks, runs, intraword=False)


def _macros(text: str, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """The inline macros in ``text[start:end]``, leftmost first, not overlapping: (where the macro starts, where its
    target starts, its "[", its "]").

    Linear: a macro name may stand inside another's target (``link:link:link:...``), so a pattern searched at
    each name would read the same target again from each; here each target's end and each text's "]" is found once
    (remembered for the names that share it)."""
    found: list[tuple[int, int, int, int]] = []
    target_from, target_end = -1, -1  # text[target_from:target_end] holds no white space and no bracket
    closings: dict[int, int] = {}  # a "[" -> its "]" (-1: none within bounds)
    pos = start
    while (name := _MACRO_NAME.search(text, pos, end)) is not None:
        target = name.end()
        if not target_from <= target <= target_end:
            stop = _MACRO_TARGET_END.search(text, target, end)
            target_from, target_end = target, end if stop is None else stop.start()
        opening = target_end
        if opening - target > _MACRO_PART or opening >= end or text[opening] != "[":
            pos = name.start() + 1
            continue
        if opening not in closings:
            closing = text.find("]", opening + 1, min(end, opening + 2 + _MACRO_PART))
            closings[opening] = -1 if closing < 0 or text.find("\n", opening + 1, closing) >= 0 else closing
        closing = closings[opening]
        if closing < 0:
            pos = name.start() + 1
            continue
        found.append((name.start(), target, opening, closing))
        pos = closing + 1
    return found


def read_asciidoc(text: str) -> Reading:
    """``text`` with its AsciiDoc markup blanked, its section titles as headings (level: the count of ``=``),
    and its title (the first ``= Title``)."""
    blanks = Blanks(text)
    reader = _Reader(text, blanks)
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        reader.line(start, end)
        start = end + 1
    reader.close_paragraph()
    for start, end, table in reader.stretches:
        _inline(blanks, start, end, table)
    return blanks.result(reader.title)
