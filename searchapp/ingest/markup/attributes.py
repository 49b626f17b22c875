"""Markdown attribute lists (``{#anchor}``, ``{: .class key="value" }``, pymdown/kramdown style): where they are
in a stretch of text, in linear time.

A list is ``{``, an optional ``:``, at most 16 spaces or tabs, then 1 to 32 items, each followed by at most 16
spaces or tabs, then ``}``. Items: ``#name`` and ``.name`` (a name: 1 to 256 word characters, ``:`` or ``-``),
``key=value`` (a key: 1 to 64 word characters or ``-``; a value: 1 to 512 characters other than white space,
``}`` and quotes, or up to 512 in double or single quotes, on one line). Items need no space between them.

Not one regular expression: items without spaces between them, and unquoted values that may hold ``=``, ``#`` and
``.``, give a backtracking pattern exponentially many ways to fail (``{a=a=a=...`` without its ``}`` ran for
hours). Here a name or an unquoted value runs as far as its characters do, and is cut only where nothing else
could follow it: a name directly before ``=`` gives its last characters to a key (``{#id=x}`` reads ``#i`` and
``d=x``), an unquoted value directly before a quote ends in a key (``a=b c="d"`` without the space reads ``a=b``
and ``c="d"``). From a given position the items that follow are then fixed whatever ``{`` they were reached from,
so each position's outcome is worked out once and remembered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NAME = re.compile(r"[\w:-]{1,321}")  # a name, or a name and the key that follows it (256 + 64 + 1 to tell)
_KEY = re.compile(r"[\w-]{1,64}=")
_VALUE_RUN = re.compile(r"[^\s}\"']*")
_KEY_BEFORE = re.compile(r"=([\w-]{1,64})")  # matched on the reversed end of a value
_BLANKS = re.compile(r"[ \t]{0,17}")
_BLANKS_MAX = 16
_ITEMS_MAX = 32
_NAME_MAX = 256
_KEY_MAX = 64
_VALUE_MAX = 512
_FAILED = (-1, 0)


def attribute_lists(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The spans of the attribute lists in ``text[start:end]``, leftmost first, not overlapping."""
    scan = _Scan(text, end)
    spans: list[tuple[int, int]] = []
    pos = start
    while (opening := text.find("{", pos, end)) >= 0:
        first = opening + 1
        if first < end and text[first] == ":":
            first += 1
        first = scan.after_blanks(first)
        closing, items = scan.items(first) if first >= 0 else _FAILED
        if closing >= 0 and items <= _ITEMS_MAX:
            spans.append((opening, closing))
            pos = closing
        else:
            pos = opening + 1
    return spans


@dataclass
class _Scan:
    text: str
    end: int
    outcome: dict[int, tuple[int, int]] = field(default_factory=dict)  # item start -> (list end or -1, items)
    # text[run_from:run_to] holds only characters of unquoted values and run_to none: a value may start anywhere
    # in a run (after a "{" inside another value), and the run is read once, not from each start.
    run_from: int = -1
    run_to: int = -1

    def after_blanks(self, pos: int) -> int:
        """Where at most 16 spaces or tabs from ``pos`` end; -1 where more follow."""
        stop = _BLANKS.match(self.text, pos, self.end).end()  # type: ignore[union-attr]  # matches ""
        return stop if stop - pos <= _BLANKS_MAX else -1

    def items(self, pos: int) -> tuple[int, int]:
        """(where the list whose items start at ``pos`` closes, or -1; how many items it has from ``pos``)."""
        text, end, outcome = self.text, self.end, self.outcome
        path: list[tuple[int, int]] = []  # (an item's start, how many items it reads as)
        result = _FAILED
        while pos not in outcome:
            item_end, count = self.item(pos)
            path.append((pos, count))
            after = self.after_blanks(item_end) if item_end >= 0 else -1
            if after < 0 or after >= end:
                break
            if text[after] == "}":
                result = (after + 1, 0)
                break
            pos = after
        else:
            result = outcome[pos]
        for item, count in reversed(path):
            result = (result[0], result[1] + count) if result[0] >= 0 else _FAILED
            outcome[item] = result
        return result

    def item(self, pos: int) -> tuple[int, int]:
        """(where the item starting at ``pos`` ends, how many items it reads as: 1, or 2 where a key is cut from
        its end); ``(-1, 0)`` where none starts there."""
        text, end = self.text, self.end
        if pos >= end:
            return _FAILED
        if text[pos] in "#.":
            name = _NAME.match(text, pos + 1, end)
            if name is None:
                return _FAILED
            length = name.end() - name.start()
            if name.end() < end and text[name.end()] == "=":
                # A key is cut from its end: at least one character left to the name, none of the key's a ":".
                colon = text.rfind(":", name.start(), name.end())
                shortest_name = max(1, colon + 1 - name.start(), length - _KEY_MAX)
                if shortest_name > min(length - 1, _NAME_MAX):
                    return _FAILED
                value_end, more = self.value(name.end() + 1)
                return (value_end, 2 + more) if value_end >= 0 else _FAILED
            return (name.end(), 1) if length <= _NAME_MAX else _FAILED
        key = _KEY.match(text, pos, end)
        if key is None:
            return _FAILED
        value_end, more = self.value(key.end())
        return (value_end, 1 + more) if value_end >= 0 else _FAILED

    def value(self, pos: int) -> tuple[int, int]:
        """(where the value starting at ``pos`` ends, 1 where a key was cut from its end and a quoted value
        follows, else 0); ``(-1, 0)`` where none starts there."""
        text, end = self.text, self.end
        if pos >= end:
            return _FAILED
        if text[pos] in "\"'":
            return (self.quoted_end(pos), 0)
        if not self.run_from <= pos <= self.run_to:
            self.run_from, self.run_to = pos, _VALUE_RUN.match(text, pos, end).end()  # type: ignore[union-attr]
        after = self.run_to
        length = after - pos
        if length == 0:
            return _FAILED
        if after < end and text[after] in "\"'" and text[after - 1] == "=":
            key = _KEY_BEFORE.match(text[max(pos, after - 1 - _KEY_MAX - 1) : after][::-1])
            longest_key = min(len(key.group(1)), length - 2) if key is not None else 0
            shortest_key = max(1, length - 1 - _VALUE_MAX)
            closing = self.quoted_end(after)
            return (closing, 1) if shortest_key <= longest_key and closing >= 0 else _FAILED
        return (after, 0) if length <= _VALUE_MAX else _FAILED

    def quoted_end(self, pos: int) -> int:
        """Where the quoted value whose quote is at ``pos`` ends (after its closing quote); -1 where it does not
        close within 512 characters on its line."""
        text = self.text
        closing = text.find(text[pos], pos + 1, min(self.end, pos + _VALUE_MAX + 2))
        if closing < 0 or text.find("\n", pos + 1, closing) >= 0:
            return -1
        return closing + 1
