"""A document's text rebuilt from its stored passages: the full text of a document is not stored.

Each passage row holds ``text[start:end]`` of its document, and the splitter keeps every character but the
whitespace between passages, so the passages at their offsets give the text back except for that whitespace. Each
passage also records where it starts as line and column (``lines.py``), so the whitespace between two passages is
laid out with the line breaks it held: the rebuilt text's lines are the document's, and a hit's ``path:line`` is
the line a reader of it sees. ``Index.document`` and ``Index.context`` read through :func:`document_text` and
:func:`passage_context`.
"""

from __future__ import annotations

from collections.abc import Sequence

from searchapp.errors import DocumentNotFoundError
from searchapp.lines import START, Position, end_of, head, load_source_lines, spot, tail
from searchapp.setting import DEFAULT_CONTEXT_CHARS, whole
from searchapp.store.base import Stores
from searchapp.store.rows import StoredPassage
from searchapp.types import MAX_WHOLE, DocumentText, PassageContext


def gap(n: int) -> str:
    """What stands for ``n`` characters of whitespace whose line breaks are not known: ``n - 1`` spaces and a
    line break.

    The same length keeps every offset exact; the line break shows where one passage ends and the next begins
    (the splitter ends passages at line breaks and sentence ends, so a break is the likelier original).
    """
    return " " * (n - 1) + "\n" if n > 0 else ""


def _laid_out(n: int, since: Position, until: Position) -> list[tuple[str, int]] | None:
    """The ``n`` characters of whitespace from ``since`` to ``until`` as runs of one character: spaces, the line
    breaks between the two lines, then the spaces before ``until``'s column; ``None`` where ``n`` characters cannot
    hold them (positions that do not fit the offsets)."""
    breaks = until.line - since.line
    if breaks == 0:
        return [(" ", n)] if until.column - since.column == n else None
    indent = until.column - 1
    if breaks < 0 or n < breaks + indent:
        return None
    return [(" ", n - breaks - indent), ("\n", breaks), (" ", indent)]


def _cut(runs: list[tuple[str, int]], lo: int, hi: int) -> str:
    """Characters ``[lo, hi)`` of the text the ``runs`` make (built only for that range)."""
    out, at = [], 0
    for ch, count in runs:
        a, b = max(lo, at), min(hi, at + count)
        if b > a:
            out.append(ch * (b - a))
        at += count
    return "".join(out)


def _ends(p: StoredPassage) -> tuple[int, Position | None]:
    """Where a passage ends: its end offset and, where its lines are recorded, its end position."""
    return p.end, end_of(p.line, p.column, p.text)


def rebuild(passages: Sequence[StoredPassage], start: int, end: int) -> str:
    """The characters ``[start, end)`` of a document from its passages in text order; the result has exactly
    ``end - start`` characters. Whitespace between two passages whose lines are known holds the line breaks it
    held (:func:`_laid_out`); any other, and the whitespace after the last passage, stands as :func:`gap`.
    ``passages``: those that overlap the range and, where there are such, the last one before it and the first
    one after it (:attr:`DocumentPassages.around`), which say how the whitespace at its edges is laid out."""
    out: list[str] = []
    pos = start
    # Where the whitespace before the next passage begins (its offset and position; None: not known).
    mark: tuple[int, Position | None] = (0, START)
    for p in passages:
        if pos < min(p.start, end):
            upto = min(p.start, end)
            out.append(_whitespace(pos, upto, mark, p))
            pos = upto
        lo, hi = max(p.start, pos), min(p.end, end)
        if hi > lo:
            out.append(p.text[lo - p.start : hi - p.start])
            pos = hi
        if p.end >= mark[0]:
            mark = _ends(p)
    out.append(gap(end - pos))
    return "".join(out)


def _whitespace(pos: int, lo: int, mark: tuple[int, Position | None], p: StoredPassage) -> str:
    """Characters ``[pos, lo)`` of the whitespace before passage ``p``, which begins at ``mark``."""
    since, until = mark[1], None if p.line is None or p.column is None else Position(p.line, p.column)
    runs = None
    if since is not None and until is not None and mark[0] <= pos:
        runs = _laid_out(p.start - mark[0], since, until)
    if runs is None:
        return gap(lo - pos)
    return _cut(runs, pos - mark[0], lo - mark[0])


def document_text(stores: Stores, path: str, start: int = 0, max_chars: int | None = None) -> DocumentText:
    """The text of the document with this path (or text id) in ``stores`` from character ``start`` (a whole
    number), at most ``max_chars`` characters of it (all where ``None``); ``DocumentNotFoundError`` if there is no
    such document, ``ConfigError`` for a negative ``start`` or a ``max_chars`` below 1."""
    whole("start", start)
    if max_chars is not None:
        whole("max_chars", max_chars, ge=1)
    wanted = min(start + max_chars, MAX_WHOLE) if max_chars is not None else MAX_WHOLE
    found = stores.document_passages(path, start, wanted)
    if found is None:
        raise DocumentNotFoundError(f"no document with path or id {path!r}")
    lo, hi = min(start, found.n_chars), min(wanted, found.n_chars)
    return DocumentText(
        path=found.path, title=found.title, source=found.source, metadata=found.metadata,
        n_chars=found.n_chars, start=lo, end=hi, text=rebuild(found.around, lo, hi),
        passages=[(p.id, p.start, p.end) for p in found.passages],
    )


def passage_context(stores: Stores, passage_id: int, chars: int = DEFAULT_CONTEXT_CHARS,
                    lines: int | None = None) -> PassageContext:
    """The passage ``passage_id`` with up to ``chars`` characters of its document's text before and after it
    (whole numbers both); with ``lines``, of those only the rest of the passage's first and last lines and that
    many whole lines on each side (as ``grep -C``); ``DocumentNotFoundError`` for an unknown passage id,
    ``ConfigError`` for a negative ``chars`` or ``lines``."""
    whole("passage_id", passage_id, ge=1)
    whole("chars", chars)
    if lines is not None:
        whole("lines", lines)
    with stores.reader(dense=False) as reader:
        passage = reader.hydrate([passage_id]).get(passage_id)
    if passage is None:
        raise DocumentNotFoundError(f"no passage with id {passage_id}")
    lo, hi = max(0, passage.start - chars), min(passage.end + chars, MAX_WHOLE)
    found = stores.document_passages(passage.path, lo, hi)
    if found is None:  # removed since the passage was read
        raise DocumentNotFoundError(f"no passage with id {passage_id}")
    hi = min(hi, found.n_chars)
    before = rebuild(found.around, lo, passage.start)
    after = rebuild(found.around, passage.end, hi)
    if lines is not None:
        before, after = before[tail(before, lines):], after[:head(after, lines)]
    source_lines = load_source_lines(passage.source_lines)
    line, column, end_line, end_column = spot(passage.line, passage.column, passage.text, source_lines)
    return PassageContext(
        passage_id=passage_id, path=found.path, title=found.title, source=found.source,
        metadata=found.metadata, n_chars=found.n_chars, start=passage.start, end=passage.end,
        before=before, text=passage.text, after=after, line=line, column=column, end_line=end_line,
        end_column=end_column, source_lines=source_lines, page=passage.page,
    )
