"""The brace languages (C, C++, Java, JavaScript, TypeScript, Go, Rust, ...) outlined by brace depth, and JSON's
top-level keys.

One pass over the characters that matter (braces, quotes, comment openers, line breaks, statement ends), found by
a character class (no backtracking): a statement at depth 0 or 1 that opens a brace block is a definition from its
first line to the line of the matching brace, named by that line (``func (s *Server) Serve(l net.Listener) error``,
``class Parser extends Base``, ``impl Display for Point``). Control flow (``if``, ``for``, ...) is not a
definition. Unbalanced braces cost nothing but a definition left open to the file's end: a stray closing brace at
depth 0 is ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from searchapp.ingest.code.definition import MAX_DEFINITIONS, MAX_NAME_CHARS, Definition, name_of

# Definitions nest this deep at most: top-level blocks and the members of a class, impl or namespace.
MAX_DEPTH = 1
_SPECIAL = re.compile(r"""[{};\n"'`#]|//|/\*""")
# A line ending in one of these goes on into the next: the statement started above is still the one a brace
# opens (``function f(a,\n b) {``).
_CONTINUES = tuple(",(=+-*&|.?:<[\\")
# Where a string's scan stops: its quote, a backslash, and for one that ends with its line, the line break.
_STRING_STOPS = {(q, multiline): re.compile("[" + re.escape(q) + r"\\" + ("" if multiline else r"\n") + "]")
                 for q in "\"'`" for multiline in (False, True)}
_JSON_SPECIAL = re.compile(r'[{}\[\]"\n]')
_CONTROL = frozenset(("import", "if", "else", "for", "while", "do", "switch", "try", "catch", "finally", "return",
                      "case", "default", "match", "loop", "select", "unsafe", "defer", "go"))


@dataclass(frozen=True)
class Syntax:
    """What a brace language quotes: ``quotes`` delimit strings that end at their line's end (or the closing
    quote); ``long_quotes`` may span lines (JavaScript's template strings, Go's raw strings); ``char_quote`` a
    character literal only where it closes within three characters (Rust's ``'a`` is a lifetime, not a string)."""

    quotes: str = "\"'"
    long_quotes: str = "`"
    char_quote: str = ""


C_LIKE = Syntax()
RUST = Syntax(quotes='"', long_quotes="", char_quote="'")


def outline(text: str, syntax: Syntax = C_LIKE) -> list[Definition]:
    """The definitions of brace-language ``text``: blocks that statements at depth 0 and 1 open."""
    found: list[Definition] = []
    opened: list[Definition | None] = []  # per open brace, the definition it opened
    # The statement under way at the current depth, as (its first line, that line's offset); and the one a line
    # break just ended, which an Allman-style brace on the next line opens.
    statement: tuple[int, int] | None = None
    previous: tuple[int, int] | None = None
    line = line_start = 0
    code = False  # whether the current line has had code (not only comments and white space) so far
    last = ""  # the last code character of the current line
    at = 0
    size = len(text)
    while at < size and len(found) < MAX_DEFINITIONS:
        match = _SPECIAL.search(text, at)
        stop = match.start() if match is not None else size
        chunk = text[at:stop].rstrip()
        if chunk.strip():
            statement = statement or (line, line_start)
            code, last = True, chunk[-1]
        if match is None:
            break
        token = match.group()
        at = match.end()
        if token == "\n":
            if statement is not None and not last.endswith(_CONTINUES):
                previous, statement = statement, None
            elif statement is None and not code:
                previous = None  # a blank line: what was above is not the next brace's statement
            line, line_start, code, last = line + 1, at, False, ""
        elif token == "{":
            start = statement or previous
            if len(opened) <= MAX_DEPTH and start is not None and not _control(text, start[1]):
                found.append(Definition(start[0], len(opened), _name(_line(text, start[1]))))
                opened.append(found[-1])
            else:
                opened.append(None)
            statement = previous = None
            code, last = True, "{"
        elif token == "}":
            if opened:
                definition = opened.pop()
                if definition is not None:
                    definition.end = line
            statement = previous = None
            code, last = True, "}"
        elif token == ";":
            statement = previous = None
            code, last = True, ";"
        elif token == "#" and code:
            last = "#"  # ordinary code: only a line's first character starts a preprocessor line or an attribute
        elif token in ("#", "//"):
            at = _line_end(text, at)
        elif token == "/*":
            end = text.find("*/", at)
            at, line, line_start = _skip(text, at, size if end < 0 else end + 2, line, line_start)
        else:
            statement = statement or (line, line_start)
            at, line, line_start = _string(text, token, at, syntax, line, line_start)
            code, last = True, token
    return found


def json_keys(text: str) -> list[Definition]:
    """JSON's top-level keys: each line inside the outer object, at depth 1, that starts with a quoted key."""
    found: list[Definition] = []
    depth = line = at = 0
    code = False
    size = len(text)
    while at < size and len(found) < MAX_DEFINITIONS:
        match = _JSON_SPECIAL.search(text, at)
        if match is None:
            break
        token = match.group()
        at = match.end()
        if token == "\n":
            line, code = line + 1, False
            continue
        if token in "{[":
            depth += 1
        elif token in "}]":
            depth = max(0, depth - 1)
        else:
            end = _string_end(text, at, token)
            if depth == 1 and not code:
                found.append(Definition(line, 0, name_of(text[at:end].removesuffix(token))))
            at = end
        code = True
    return found


def _string(text: str, quote: str, at: int, syntax: Syntax, line: int, line_start: int) -> tuple[int, int, int]:
    """Past the string that ``quote`` opened just before ``at``: (where scanning goes on, its line, its line's
    start)."""
    if quote in syntax.long_quotes:
        return _skip(text, at, _string_end(text, at, quote, multiline=True), line, line_start)
    if quote == syntax.char_quote:
        close = text.find(quote, at, at + 3)
        return (close + 1 if close >= 0 and "\n" not in text[at:close] else at), line, line_start
    if quote in syntax.quotes:
        return _string_end(text, at, quote), line, line_start
    return at, line, line_start


def _string_end(text: str, at: int, quote: str, multiline: bool = False) -> int:
    """Just past the closing ``quote`` (a backslash escapes); at the line's end where a one-line string is left
    open there (the line break is then read as one)."""
    stops = _STRING_STOPS[(quote, multiline)]
    size = len(text)
    while at < size:
        match = stops.search(text, at)
        if match is None:
            return size
        char = match.group()
        if char == quote:
            return match.end()
        if char == "\n":
            return match.start()
        at = match.end() + 1  # a backslash and the character it escapes
    return size


def _skip(text: str, at: int, end: int, line: int, line_start: int) -> tuple[int, int, int]:
    """To ``end``, counting the line breaks passed."""
    breaks = text.count("\n", at, end)
    if breaks:
        line, line_start = line + breaks, text.rfind("\n", at, end) + 1
    return end, line, line_start


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end < 0 else end


def _line(text: str, start: int) -> str:
    """The line that starts at offset ``start``, at most the characters a name keeps and a few more."""
    return text[start : min(_line_end(text, start), start + 4 * MAX_NAME_CHARS)]


def _name(line: str) -> str:
    """A definition's line up to its first brace (``constructor() { super(); }`` is ``constructor()``)."""
    head = line.split("{", 1)[0]
    return name_of(head if head.strip() else line)


def _control(text: str, start: int) -> bool:
    words = _line(text, start).replace("}", " ").replace("(", " ").split()
    return bool(words) and words[0] in _CONTROL
