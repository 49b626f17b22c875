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
# Blanks within a line: everything a markup reader blanks to, and the white space a line may hold.
_BLANKS = re.compile(r"[ \t\f\v\r\u00a0]+")


def clean_map(text: str) -> tuple[str, list[int]]:
    """``text`` made clean, and for each character of the clean text the offset in ``text`` it comes from (a
    collapsed run of blanks: its first character; a line break between kept lines: the break that ended the
    line before).

    :returns: ``(clean, origins)``, ``len(origins) == len(clean)``, ``origins`` increasing.
    """
    out: list[str] = []
    origins: list[int] = []
    gap: int | None = None  # where the last kept line ended, None before the first
    blank_between = False
    at = 0
    for line in text.split("\n"):
        start, at = at, at + len(line) + 1
        if _DIRECTIVE.fullmatch(line):
            continue
        pieces: list[tuple[str, int]] = []
        pos = 0
        for m in _BLANKS.finditer(line):
            if m.start() > pos:
                pieces.append((line[pos:m.start()], start + pos))
            pieces.append((" ", start + m.start()))
            pos = m.end()
        if pos < len(line):
            pieces.append((line[pos:], start + pos))
        while pieces and pieces[0][0] == " ":
            pieces.pop(0)
        while pieces and pieces[-1][0] == " ":
            pieces.pop()
        if not pieces:
            blank_between = gap is not None
            continue
        if gap is not None:
            breaks = "\n\n" if blank_between else "\n"
            out.append(breaks)
            origins.extend([gap] * len(breaks))
        blank_between = False
        for piece, origin in pieces:
            out.append(piece)
            origins.extend(range(origin, origin + len(piece)) if piece != " " else [origin])
        gap = start + len(line)
    return "".join(out), origins


def clean_text(text: str) -> str:
    """``text`` as :func:`clean_map` cleans it (markup blanks collapsed, include directives dropped)."""
    return clean_map(text)[0]
