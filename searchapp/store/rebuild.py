"""A document's text rebuilt from its stored passages: the full text of a document is not stored.

Each passage row holds ``text[start:end]`` of its document, and the splitter keeps every character but the
whitespace between passages, so the passages at their offsets give the text back except for that whitespace.
``Index.document`` and ``Index.context`` read through :func:`document_text` and :func:`passage_context`.
"""

from __future__ import annotations

from collections.abc import Sequence

from searchapp.errors import DocumentNotFoundError
from searchapp.store.base import Stores
from searchapp.types import MAX_WHOLE, DocumentText, PassageContext


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


def document_text(stores: Stores, path: str, start: int = 0, max_chars: int | None = None) -> DocumentText:
    """The text of the document with this path (or text id) in ``stores`` from character ``start`` (a whole
    number), at most ``max_chars`` characters of it (all where ``None``); ``DocumentNotFoundError`` if there is no
    such document."""
    wanted = min(start + max_chars, MAX_WHOLE) if max_chars is not None else MAX_WHOLE
    found = stores.document_passages(path, start, wanted)
    if found is None:
        raise DocumentNotFoundError(f"no document with path or id {path!r}")
    lo, hi = min(start, found.n_chars), min(wanted, found.n_chars)
    return DocumentText(
        path=found.path, title=found.title, source=found.source, metadata=found.metadata,
        n_chars=found.n_chars, start=lo, end=hi, text=rebuild(found.passages, lo, hi),
        passages=[(i, s, e) for i, s, e, _ in found.passages],
    )


def passage_context(stores: Stores, passage_id: int, chars: int = 300) -> PassageContext:
    """The passage ``passage_id`` with up to ``chars`` characters of its document's text before and after it
    (whole numbers both); ``DocumentNotFoundError`` for an unknown passage id."""
    with stores.reader(dense=False) as reader:
        passage = reader.hydrate([passage_id]).get(passage_id)
    if passage is None:
        raise DocumentNotFoundError(f"no passage with id {passage_id}")
    lo, hi = max(0, passage.start - chars), min(passage.end + chars, MAX_WHOLE)
    found = stores.document_passages(passage.path, lo, hi)
    if found is None:  # removed since the passage was read
        raise DocumentNotFoundError(f"no passage with id {passage_id}")
    hi = min(hi, found.n_chars)
    return PassageContext(
        passage_id=passage_id, path=found.path, title=found.title, source=found.source,
        metadata=found.metadata, n_chars=found.n_chars, start=passage.start, end=passage.end,
        before=rebuild(found.passages, lo, passage.start), text=passage.text,
        after=rebuild(found.passages, passage.end, hi),
    )
