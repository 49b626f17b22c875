"""Ignore file lines read as git reads them, and their patterns translated to RE2 (``ingest/ignore.py`` uses both).

Git works on bytes (``dir.c``, ``wildmatch.c``), and so does this module: an ignore file is split at ``\\n`` only
(one ``\\r`` before it dropped; a form feed, U+2028 or NEL is part of the line), a UTF-8 byte order mark at its
start skipped, a line cut at a NUL byte, a line starting with ``#`` a comment, trailing spaces dropped unless
escaped with a backslash. A pattern is matched against a path's bytes, one byte a character (``?`` does not match
the two bytes of ``é``), as git's wildmatch with ``WM_PATHNAME``: ``*`` and ``?`` never match ``/``; ``**`` matches
across folders where a slash (or the pattern's start) is before it and a slash (escaped or not) or the pattern's end
after it; brackets as wildmatch reads them (``!`` or ``^`` negates, a ``]`` first is a member, ranges, backslash
escapes, the POSIX classes over ASCII as git's ``sane_ctype`` defines them: ``[[:space:]]`` is tab, line feed,
carriage return and space). A pattern wildmatch can never match (an unclosed bracket, an unknown class, a
trailing backslash) is ``None``: git matches nothing with it.

The translation is RE2 syntax for its Latin-1 mode (a byte a character), linear in the path whatever the pattern:
no backtracking construct is used, and RE2 has none.
"""

from __future__ import annotations

from dataclasses import dataclass

# A folder's text, as the matcher sees it, ends in this byte (no path holds it): directory-only patterns need it.
DIR_MARK = "\\x00"
# One byte of a path but "/" (and the folder mark): what "?" and "*" match.
NOT_SLASH = "[^/\\x00]"
# Any byte of a path, "/" too: what "**" matches.
ANY = "[^\\x00]"

_SLASH = ord("/")
_BACKSLASH = ord("\\")


def _chars(*spans: tuple[int, int]) -> frozenset[int]:
    return frozenset(b for low, high in spans for b in range(low, high + 1))


# wildmatch's POSIX classes: git's own ctype table (ASCII only, whatever the locale); checked against git 2.39 by
# naming one file after each byte.
CLASSES = {
    b"alnum": _chars((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)),
    b"alpha": _chars((0x41, 0x5A), (0x61, 0x7A)),
    b"blank": _chars((0x09, 0x09), (0x20, 0x20)),
    b"cntrl": _chars((0x01, 0x1F), (0x7F, 0x7F)),
    b"digit": _chars((0x30, 0x39)),
    b"graph": _chars((0x21, 0x7E)),
    b"lower": _chars((0x61, 0x7A)),
    b"print": _chars((0x20, 0x7E)),
    b"punct": _chars((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)),
    b"space": _chars((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)),
    b"upper": _chars((0x41, 0x5A)),
    b"xdigit": _chars((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)),
}
_BYTES = frozenset(range(1, 256)) - {_SLASH}  # what one character of a path name can be


@dataclass(frozen=True)
class Pattern:
    """One ignore pattern, translated: ``regex`` (RE2, Latin-1) matches the whole text it is tried on: the path's
    last name (``basename``: a pattern without a slash but at its end, as git matches it) or its path relative to
    the ignore file's folder, followed by :data:`DIR_MARK` for a folder. ``slashes``: how many slashes every path it
    matches holds (``None``: any number, through ``**``), so a path with another count need not be tried."""

    regex: str
    negated: bool
    basename: bool
    slashes: int | None


def lines(data: bytes) -> list[tuple[int, bytes]]:
    """The pattern lines of an ignore file's bytes, each with its index among the file's lines, as git's
    ``add_patterns_from_buffer`` reads them (comments and empty lines left out, trailing spaces trimmed)."""
    out = []
    for number, line in enumerate(data.removeprefix(b"\xef\xbb\xbf").split(b"\n")):
        if not line or line.startswith(b"#"):
            continue
        line = line.removesuffix(b"\r").split(b"\0", 1)[0]  # a C string: a NUL ends it
        if line := _trim_trailing_spaces(line):
            out.append((number, line))
    return out


def _trim_trailing_spaces(line: bytes) -> bytes:
    """git's ``trim_trailing_spaces``: the spaces at the end go, but one escaped by a backslash (and those before
    it) stay; a line ending in a lone backslash is kept whole."""
    last_space = None
    i = 0
    while i < len(line):
        if line[i] == 0x20:
            last_space = i if last_space is None else last_space
        else:
            if line[i] == _BACKSLASH:
                i += 1
                if i == len(line):
                    return line
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]


def parse(line: bytes) -> Pattern | None:
    """One pattern line (from :func:`lines`) translated, or ``None`` where it can match no path (git keeps it, and
    it never decides)."""
    negated = line.startswith(b"!")
    body = line[1:] if negated else line
    literal = _literal_length(body)  # git's "nowildcardlen", taken before the trailing slash goes
    dir_only = body.endswith(b"/")
    body = body[:-1] if dir_only else body
    if not body:
        return None  # matches an empty name: none
    literal = min(literal, len(body))
    end = DIR_MARK if dir_only else DIR_MARK + "?"
    if b"/" not in body:
        glob = translate(body)
        return None if glob is None else Pattern(glob[0] + end, negated, True, 0)
    if body.startswith(b"/"):
        body, literal = body[1:], literal - 1
    # git compares the literal start itself and hands wildmatch the rest: a "**" right after that start is the
    # rest's first, and so matches across folders ("a/b**/c" matches "a/bx/y/c"; git 2.39 does so).
    rest = translate(body[literal:])
    if rest is None:
        return None
    slashes = None if rest[1] is None else body[:literal].count(b"/") + rest[1]
    return Pattern("".join(map(_byte, body[:literal])) + rest[0] + end, negated, False, slashes)


def _literal_length(glob: bytes) -> int:
    """The length of ``glob``'s start without ``*``, ``?``, ``[`` or ``\\`` (git's ``simple_length``)."""
    for i, b in enumerate(glob):
        if b in b"*?[\\":
            return i
    return len(glob)


def translate(glob: bytes) -> tuple[str, int | None] | None:
    """``glob`` as wildmatch reads it with ``WM_PATHNAME``, in RE2 syntax, with the number of slashes every match
    holds (``None``: any); ``None`` where wildmatch matches nothing with it."""
    out: list[str] = []
    slashes: int | None = 0
    i, n = 0, len(glob)
    while i < n:
        b = glob[i]
        if b == _BACKSLASH:
            if i + 1 == n:
                return None  # wildmatch compares the text's next byte with the pattern's end: never equal
            out.append(_byte(glob[i + 1]))
            slashes = None if slashes is None else slashes + (glob[i + 1] == _SLASH)
            i += 2
        elif b == ord("?"):
            out.append(NOT_SLASH)
            i += 1
        elif b == ord("*"):
            j = i
            while j < n and glob[j] == ord("*"):
                j += 1
            if j - i > 1 and (i == 0 or glob[i - 1] == _SLASH) and (
                    j == n or glob[j] == _SLASH or glob[j:j + 2] == b"\\/"):
                slashes = None
                if j < n and glob[j] == _SLASH:  # "**/": no folder, or any folders
                    out.append(f"(?:{ANY}*/)?")
                    j += 1
                else:  # at the end, or before an escaped slash: anything
                    out.append(f"{ANY}*")
            else:
                out.append(f"{NOT_SLASH}*")
            i = j
        elif b == ord("["):
            found = _bracket(glob, i)
            if found is None:
                return None
            members, i = found
            out.append(_class(members))
        else:
            out.append(_byte(b))
            slashes = None if slashes is None else slashes + (b == _SLASH)
            i += 1
    return "".join(out), slashes


def _member(glob: bytes, p: int) -> tuple[int, int] | None:
    """The byte a bracket expression's member at ``glob[p]`` stands for, and where it was read: the next byte where
    ``glob[p]`` is a backslash; ``None`` where that escape ends the glob."""
    if glob[p] == _BACKSLASH:
        p += 1
        if p >= len(glob):
            return None
    return glob[p], p


def _bracket(glob: bytes, start: int) -> tuple[frozenset[int], int] | None:
    """The bytes the bracket expression at ``glob[start]`` (a ``[``) matches, and the index after it, as
    wildmatch's loop reads it; ``None`` where it is malformed or matches no byte (wildmatch aborts, or can never
    match)."""
    n = len(glob)
    p = start + 1
    if p >= n:
        return None
    negated = glob[p] in b"!^"
    p += negated
    if p >= n:
        return None
    members: set[int] = set()
    prev = 0  # the member before, the start of a range ("-" with none before is a member)
    while True:
        c = glob[p]
        if c == _BACKSLASH:
            read = _member(glob, p)
            if read is None:
                return None
            c, p = read
            members.add(c)
        elif c == ord("-") and prev and p + 1 < n and glob[p + 1] != ord("]"):
            read = _member(glob, p + 1)
            if read is None:
                return None
            c, p = read
            members.update(range(prev, c + 1))
            c = 0
        elif c == ord("[") and p + 1 < n and glob[p + 1] == ord(":"):
            name_start = p + 2
            close = glob.find(b"]", name_start)
            if close < 0:
                return None
            if close - name_start - 1 < 0 or glob[close - 1] != ord(":"):
                members.add(c)  # no ":]": the "[" is a member, and the ":" after it is read next
                p = name_start - 2
            else:
                named = CLASSES.get(glob[name_start:close - 1])
                if named is None:
                    return None
                members |= named
                p, c = close, 0
        else:
            members.add(c)
        prev = c
        p += 1
        if p >= n:
            return None
        if glob[p] == ord("]"):
            break
    chosen = (_BYTES - members) if negated else (members & _BYTES)
    return (frozenset(chosen), p + 1) if chosen else None


def _class(members: frozenset[int]) -> str:
    """An RE2 class of exactly ``members`` (bytes), as ranges."""
    spans: list[list[int]] = []
    for b in sorted(members):
        if spans and spans[-1][1] == b - 1:
            spans[-1][1] = b
        else:
            spans.append([b, b])
    return "[" + "".join(_byte(lo) if lo == hi else f"{_byte(lo)}-{_byte(hi)}" for lo, hi in spans) + "]"


def _byte(b: int) -> str:
    """One byte as an RE2 literal (Latin-1 mode)."""
    return chr(b) if chr(b).isascii() and chr(b).isalnum() else f"\\x{{{b:02x}}}"
