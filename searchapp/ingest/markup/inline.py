"""Markdown's inline markup in one stretch of text (a paragraph, a heading, an admonition's title), blanked in
place: code spans (their backticks blanked, their text kept literal), backslash escapes, autolinks, HTML tags
and comments, links and images (text or alt kept; targets, reference labels and brackets blanked), footnote
references, attribute lists (``{#anchor}``, ``{ .class }``: ``attributes``), emphasis and strikethrough
delimiters that pair up, and a table row's pipes.

Every pattern is bounded (no nested unbounded repetition; long targets and titles are capped) and is tried where
it can start, each pass moves forward through the stretch, and nothing is read again for each match (openers left
when a link closes are dropped as they come up), so the work is linear in its length.
"""

from __future__ import annotations

import re
from bisect import bisect_left

from searchapp.ingest.markup.attributes import attribute_lists
from searchapp.ingest.markup.blanks import Blanks, pair_delimiters

_PASS_ONE = re.compile(r"[\\`<]")
_BACKTICKS = re.compile(r"`+")
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_AUTOLINK = re.compile(
    r"<(?:[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]{0,2048}|[\w.+-]{1,128}@[\w-]{1,128}(?:\.[\w-]{1,128}){0,16})>"
)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]{0,31}(?:[\s/][^<>]{0,2048})?>")
_BRACKETS = re.compile(r"[\[\]]")
# ( destination [title] ): a destination in <...> or without spaces, with one level of balanced parentheses.
# A destination may be empty: the blanks before and after it are then read by one part of the pattern (at most 128,
# as when two read them), not shared out between two every way there is.
_DEST_PART = r"[^\s()<>]{0,2048}"
_DEST_PARENS = r"\(" + _DEST_PART + r"\)" + _DEST_PART
_TARGET_TITLE = r"(?:\"[^\"]{0,2048}\"|'[^']{0,2048}'|\([^()]{0,2048}\))"
_TARGET = re.compile(
    r"\((?:\s{0,64}(?:<[^<>\n]{0,2048}>|[^\s()<>]{1,2048}(?:" + _DEST_PARENS + r"){0,4}|(?:" + _DEST_PARENS + r"){1,4})"
    r"(?:\s{1,64}" + _TARGET_TITLE + r")?\s{0,64}|\s{1,128}" + _TARGET_TITLE + r"\s{0,64}|\s{0,128})\)"
)
_LABEL = re.compile(r"\[(?:[^\[\]\\]|\\.){0,999}\]")
_DELIMITERS = re.compile(r"\*+|_+|~+|\|")
_EMPHASIS = re.compile(r"\*+|_+|~+")  # outside tables, a pipe is text


def normalise_label(label: str) -> str:
    """A link reference's label as matched: case-folded, inner whitespace collapsed."""
    return " ".join(label.split()).casefold()


def blank_inline(blanks: Blanks, start: int, end: int, references: frozenset[str], table: bool = False) -> None:
    """Blank the inline markup of ``text[start:end]``; ``references`` are the document's defined reference
    labels (normalised) that make ``[text]`` a link; ``table``: the stretch is table rows (pipes are markup)."""
    _literals(blanks, start, end)
    _links(blanks, start, end, references)
    for span in attribute_lists(blanks.text, start, end):
        if blanks.free(*span):
            blanks.blank(*span)
    _delimiters(blanks, start, end, table)


def _literals(blanks: Blanks, start: int, end: int) -> None:
    """Escapes, code spans, autolinks, comments and tags: what makes the characters inside it literal."""
    text = blanks.text
    runs: dict[int, list[int]] = {}
    for run in _BACKTICKS.finditer(text, start, end):
        runs.setdefault(run.end() - run.start(), []).append(run.start())
    no_comment_end = False
    pos = start
    while (found := _PASS_ONE.search(text, pos, end)) is not None:
        i = found.start()
        ch = text[i]
        pos = i + 1
        if ch == "\\":
            if i + 1 < end and (text[i + 1] in _ASCII_PUNCT or text[i + 1] == "\n"):
                blanks.blank(i, i + 1)
                blanks.keep(i + 1, i + 2)
                pos = i + 2
        elif ch == "`":
            close = _BACKTICKS.match(text, i, end).end()  # type: ignore[union-attr]  # text[i] is "`"
            length = close - i
            starts = runs.get(length, [])
            # The next run of exactly this length closes the span; none: the backticks are literal.
            at = bisect_left(starts, close)
            if at < len(starts) and starts[at] + length <= end:
                closer = starts[at]
                blanks.blank(i, close)
                blanks.keep(close, closer)
                blanks.blank(closer, closer + length)
                pos = closer + length
            else:
                blanks.keep(i, close)
                pos = close
        elif text.startswith("<!--", i):
            stop = -1 if no_comment_end else text.find("-->", i + 4, end)
            if stop < 0:
                no_comment_end = True
            else:
                blanks.blank(i, stop + 3)
                pos = stop + 3
        elif (link := _AUTOLINK.match(text, i, end)) is not None:
            blanks.blank(i, i + 1)
            blanks.keep(i + 1, link.end() - 1)
            blanks.blank(link.end() - 1, link.end())
            pos = link.end()
        elif (tag := _TAG.match(text, i, end)) is not None:
            blanks.blank(i, tag.end())
            pos = tag.end()


def _links(blanks: Blanks, start: int, end: int, references: frozenset[str]) -> None:
    """Links and images: inline ``[text](target)``, full ``[text][label]`` and collapsed ``[text][]`` references
    (taken as links whatever the labels: mkdocs-autorefs resolves them across pages), ``[text]`` where its label
    is defined, footnote references ``[^1]``. The text (an image's alt) is kept."""
    text = blanks.text
    # Openers: (position of '[' or '!', length of the opener: 1 or 2, links closed before it was seen, brackets
    # read up to it, itself included). No link inside a link: a '[' still open when a link closes is literal; it
    # is dropped when it comes up, not searched for at every link (quadratic in the openers and the links).
    openers: list[tuple[int, int, int, int]] = []
    links = 0
    brackets = 0  # brackets read so far (not escaped, not in code): a label holding one is no reference's
    pos = start
    while (found := _BRACKETS.search(text, pos, end)) is not None:
        i = found.start()
        pos = i + 1
        if not blanks.usable(i):
            continue
        brackets += 1
        if text[i] == "[":
            image = i > start and text[i - 1] == "!" and blanks.usable(i - 1)
            openers.append((i - 1, 2, links, brackets) if image else (i, 1, links, brackets))
            continue
        while openers and openers[-1][1] == 1 and openers[-1][2] < links:
            openers.pop()
        if not openers:
            continue
        opener, width, _, seen = openers.pop()
        after = i + 1
        target = None
        if after < end and text[after] == "(" and blanks.usable(after):
            target = _TARGET.match(text, after, end)
        elif after < end and text[after] == "[" and blanks.usable(after):
            target = _LABEL.match(text, after, end)
        # A target may hold what looked like a tag (``<a b.md>``), blanked already; not a code span's text.
        if target is not None and blanks.kept.find(1, after, target.end()) < 0:
            blanks.blank(opener, opener + width)
            blanks.blank(i, target.end())
            pos = target.end()
            if width == 1:
                links += 1
            continue
        length = i - opener - width
        if length > 999:  # longer than any label: the text is not sliced (bounded work)
            continue
        if width == 1 and 1 < length <= 64 and text.startswith("^", opener + 1) \
                and not any(c.isspace() for c in text[opener + 1 : i]):
            blanks.blank(opener, i + 1)
        elif brackets == seen + 1 and references and normalise_label(text[opener + width : i]) in references:
            blanks.blank(opener, opener + width)
            blanks.blank(i, i + 1)


def _delimiters(blanks: Blanks, start: int, end: int, table: bool) -> None:
    text = blanks.text
    runs: list[tuple[int, int]] = []
    for match in (_DELIMITERS if table else _EMPHASIS).finditer(text, start, end):
        s, e = match.span()
        # A run is cut where a character in it is already markup or literal (an escaped star).
        if blanks.free(s, e):
            run_end = e
        else:
            s = blanks.first_usable(s, e)
            run_end = blanks.first_used(s, e)
            if run_end <= s:
                continue
        ch = text[s]
        if ch == "|":
            if table:
                blanks.blank(s, run_end)
        elif ch == "~":
            if run_end - s == 2:
                runs.append((s, run_end))
        else:
            runs.append((s, run_end))
    pair_delimiters(blanks, runs, intraword=True)
