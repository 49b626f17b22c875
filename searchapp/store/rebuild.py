"""A document's text rebuilt from its stored passages: the full text of a document is not stored.

Each passage row holds ``text[start:end]`` of its document, and the splitter keeps every character but the
whitespace between passages, so the passages at their offsets give the text back except for that whitespace.
"""

from __future__ import annotations

from collections.abc import Sequence


def gap(n: int) -> str:
    """What stands for ``n`` characters of whitespace that were not stored: ``n - 1`` spaces and a line break.

    The same length keeps every offset exact; the line break shows where one passage ends and the next begins
    (the splitter ends passages at line breaks and sentence ends, so a break is the likelier original).
    """
    return " " * (n - 1) + "\n" if n > 0 else ""


def rebuild(passages: Sequence[tuple[int, int, int, str]], start: int, end: int) -> str:
    """The characters ``[start, end)`` of a document from its ``(passage_id, start, end, text)`` passages in text
    order; the result has exactly ``end - start`` characters, what no passage covers filled by :func:`gap`."""
    out: list[str] = []
    pos = start
    for _, p_start, p_end, text in passages:
        lo, hi = max(p_start, pos), min(p_end, end)
        if hi <= lo:
            continue  # outside the window, or already covered by an overlapping passage
        out.append(gap(lo - pos))
        out.append(text[lo - p_start : hi - p_start])
        pos = hi
    out.append(gap(end - pos))
    return "".join(out)
