"""Ranking a query against an index: lexical, dense, or hybrid (convex combination of normalised scores).

Hybrid takes ``k0`` candidates from each side, gives every candidate both real scores (a passage the lexical
side did not return gets its BM25 score computed, 0 if it shares no term; one the dense side did not return
gets its cosine from its stored vector), normalises each side with theoretical min-max (BM25 from 0, cosine
from -1, to the maximum observed among the candidates) and ranks by ``alpha * dense + (1 - alpha) * lexical``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchapp.config import check_mode
from searchapp.errors import ConfigError
from searchapp.query.fusion import BM25_MIN, COSINE_MIN, Run, convex, theoretical_minmax
from searchapp.store import lexical
from searchapp.types import Hit

if TYPE_CHECKING:
    from searchapp.index import Index


def search(
    index: Index, query: str, k: int = 10, mode: str = "hybrid", alpha: float | None = None, k0: int | None = None
) -> list[Hit]:
    """The ``k`` best passages for ``query`` in ``mode`` (``hybrid``, ``dense`` or ``lexical``)."""
    check_mode(mode)
    if k < 1:
        raise ConfigError(f"k must be at least 1, got {k}")
    alpha = index.config.alpha if alpha is None else alpha
    k0 = max(index.config.k0 if k0 is None else k0, k)
    if not 0.0 <= alpha <= 1.0:
        raise ConfigError(f"alpha must be in [0, 1], got {alpha}")
    if not query.strip():
        return []
    dense: dict[int, float] = {}
    lex: dict[int, float] = {}
    with index.meta.connect() as conn:
        if mode == "lexical":
            run = lexical.search(conn, query, k)
            lex = dict(run)
        else:
            qvec = index.encoder.encode([query], truncate=True)[0]
            if mode == "dense":
                run = index.vectors.search(qvec, k)
                dense = dict(run)
            else:
                dense = dict(index.vectors.search(qvec, k0))
                lex = dict(lexical.search(conn, query, k0))
                missing_dense = [pid for pid in lex if pid not in dense]
                dense.update(index.vectors.scores(qvec, missing_dense))
                lex.update(lexical.scores(conn, query, [pid for pid in dense if pid not in lex]))
                for pid in lex:  # a candidate with no stored vector cannot rank above any real one
                    dense.setdefault(pid, COSINE_MIN)
                run = convex(
                    theoretical_minmax(dense, COSINE_MIN), theoretical_minmax(lex, BM25_MIN), alpha
                )[:k]
    return _hydrate(index, run, dense, lex, mode)


def _hydrate(index: Index, run: Run, dense: dict[int, float], lex: dict[int, float], mode: str) -> list[Hit]:
    records = index.meta.hydrate([pid for pid, _ in run])
    hits: list[Hit] = []
    for pid, score in run:
        rec = records.get(pid)
        if rec is None:  # removed by a concurrent ingest after ranking
            continue
        hits.append(
            Hit(
                rank=len(hits) + 1, score=score, passage_id=pid, path=rec.path, title=rec.title,
                start=rec.start, end=rec.end, text=rec.text,
                dense_score=dense.get(pid) if mode != "lexical" else None,
                lexical_score=lex.get(pid) if mode != "dense" else None,
            )
        )
    return hits
