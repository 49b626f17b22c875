"""A passage's clean text, for a prompt: the text a reader sees, without what the markup readers left behind.

The stored text keeps the document's offsets exact: markup is blanked to spaces of the same length
(``ingest/markup/blanks.py``), so a heading's ``## `` or a link's brackets leave runs of spaces, and lines of
mkdocs' and pymdown's include directives (``{* ../../docs_src/app.py *}``, ``--8<-- "file.md"``) read as words.
The clean text collapses each run of blanks within a line to one space (and trims the line), a run of blank
lines to one, and drops the include directives' lines. It is computed here alone, with the place in the exact
text each of its characters comes from (:func:`clean_map`), so that a highlight found in the exact text can be
shown in the clean one. One pass, linear in the text's length.
"""

from __future__ import annotations

import re

# A whole line that only includes another file: mkdocs' `{* path *}` (FastAPI's docs), pymdown's snippet lines
# (`--8<-- "file"`, or a bare `--8<--` opening and closing a block of file names).
_DIRECTIVE = re.compile(r"[ \t]*(?:\{\*[^\n]*\*\}|-{2,}8<-{2,}[^\n]*)[ \t]*")
# Blanks within a line, each read as a space (one for one, so that offsets hold); a run of two or more is collapsed.
_BLANKS = "\t\f\v\r\u00a0"
_SPACES = str.maketrans(dict.fromkeys(_BLANKS, " "))


def _spaced(text: str) -> str:
    """``text`` with each of :data:`_BLANKS` read as a space. Most texts hold none: a search for each is a
    memchr, where ``str.translate`` looks every character up in a dictionary (30 us for a passage of 800
    characters, most of what a search spent on its hits)."""
    return text.translate(_SPACES) if any(c in text for c in _BLANKS) else text


def _pieces(text: str) -> list[tuple[str, int]]:
    """The clean text as pieces, each with the offset in ``text`` its first character comes from; a piece of
    more than one character comes whole from there (a collapsed blank or a line break is a piece of its own).
    Runs of blanks are found with ``str.find`` (the regular expression engine scans a character class slowly)."""
    out: list[tuple[str, int]] = []
    gap: int | None = None  # where the last kept line ended, None before the first
    blank_between = False
    at = 0
    for spaced in _spaced(text).split("\n"):
        start, at = at, at + len(spaced) + 1
        body = spaced.lstrip(" ")
        base = start + len(spaced) - len(body)
        body = body.rstrip(" ")
        if not body or _DIRECTIVE.fullmatch(spaced):
            blank_between = blank_between or (gap is not None and not body)
            continue
        if gap is not None:
            out.append(("\n\n" if blank_between else "\n", gap))
        blank_between = False
        pos = 0
        while (run := body.find("  ", pos)) >= 0:
            end = run + 2
            while body[end] == " ":  # the body ends with no space: a run always ends before it does
                end += 1
            out.append((body[pos:run], base + pos))
            out.append((" ", base + run))
            pos = end
        out.append((body[pos:], base + pos))
        gap = start + len(spaced)
    return out


def clean_map(text: str) -> tuple[str, list[int]]:
    """``text`` made clean, and for each character of the clean text the offset in ``text`` it comes from (a
    collapsed run of blanks: its first character; a line break between kept lines: the break that ended the
    line before).

    :returns: ``(clean, origins)``, ``len(origins) == len(clean)``, ``origins`` increasing.
    """
    pieces = _pieces(text)
    origins: list[int] = []
    for piece, origin in pieces:
        origins.extend([origin] * len(piece) if piece in ("\n", "\n\n", " ") else range(origin, origin + len(piece)))
    return "".join(piece for piece, _ in pieces), origins


def clean_text(text: str) -> str:
    """``text`` as :func:`clean_map` cleans it (markup blanks collapsed, include directives dropped)."""
    return "".join(piece for piece, _ in _pieces(text))
