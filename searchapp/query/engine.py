"""Ranking queries against an index: lexical, dense, or hybrid.

Hybrid takes ``k0`` candidates from each side and gives every candidate both real scores: a passage the
lexical side did not return gets its BM25 score computed (0 if it shares no term with the query); one the
dense side did not return gets its cosine from its stored vector. The fusion (``query/fusion.py``) then ranks
the candidates. Queries are encoded in batches.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Connection, text

from searchapp.config import check_mode
from searchapp.errors import ConfigError
from searchapp.query.filters import Filter
from searchapp.query.fusion import COSINE_MIN, Fusion, Run, convex, normalise, rrf
from searchapp.store import lexical
from searchapp.types import Hit

if TYPE_CHECKING:
    from searchapp.index import Index


@dataclass(frozen=True)
class Candidates:
    """Hybrid candidates of one query: both sides' raw scores for the same passage ids."""

    query: str
    dense: dict[int, float]
    lexical: dict[int, float]


@dataclass(frozen=True)
class Scope:
    """The passages a filtered query may return: SQL for the lexical side, ids for the dense side."""

    sql: lexical.Restrict
    ids: np.ndarray | None  # int64 (m,); None in lexical mode, which does not need them

    @classmethod
    def of(cls, conn: Connection, flt: Filter | None, need_ids: bool) -> Scope | None:
        """``None`` when nothing is filtered out."""
        if flt is None or flt.empty:
            return None
        sql = flt.passages_sql()
        ids = None
        if need_ids:
            ids = np.fromiter(conn.execute(text(sql[0]), sql[1]).scalars(), dtype=np.int64)
        return cls(sql, ids)


def gather(
    index: Index, conn: Connection, query: str, qvec: np.ndarray, k0: int, scope: Scope | None = None
) -> Candidates:
    """Union of each side's top ``k0`` (within ``scope``), every candidate with its real dense and lexical score.

    The dense search runs on a worker thread while FTS5 scores the query's matches (both release the GIL), so
    a hybrid query costs about the slower side, not the sum; the dense candidates' BM25 scores are then looked
    up among the materialised matches.
    """
    store = index.vectors
    pending = _worker().submit(store.search, qvec, k0, scope.ids if scope else None)
    try:
        with lexical.Matches(conn, query, k0, scope.sql if scope else None) as matches:
            dense = dict(pending.result())
            known = matches.scores(list(dense))
    finally:
        pending.cancel()
    lex = dict(matches.top)
    for pid, score in known.items():
        lex.setdefault(pid, score)
    dense.update(store.scores(qvec, [pid for pid in lex if pid not in dense]))
    for pid in lex:  # a candidate with no stored vector cannot rank above any real one
        dense.setdefault(pid, COSINE_MIN)
    return Candidates(query, dense, lex)


_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()


def _worker() -> ThreadPoolExecutor:
    """The thread hybrid queries run their dense search on (one: the vector store serialises searches anyway)."""
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="searchapp-dense"))
        return _POOL[0]


def fuse(cands: Candidates, fusion: Fusion) -> Run:
    """Rank candidates by ``fusion``."""
    if fusion.method == "rrf":
        return rrf(cands.dense, cands.lexical, fusion.rrf_k)
    alpha = fusion.alpha
    if fusion.method == "adaptive":
        from searchapp.query.adaptive import adaptive_alpha

        alpha = adaptive_alpha(cands, fusion)
    d, lx = normalise(cands.dense, cands.lexical, fusion.norm)
    return convex(d, lx, alpha)


def resolve_fusion(index: Index, overrides: dict[str, Any] | None) -> Fusion:
    """The index's fusion settings with per-query overrides (``None`` values ignored)."""
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    valid = {f.name for f in fields(Fusion)}
    unknown = sorted(set(given) - valid)
    if unknown:
        raise ConfigError(f"unknown fusion setting {', '.join(unknown)}: use {', '.join(sorted(valid))}")
    return replace(index.config.fusion_settings, **given)


def search_batch(
    index: Index,
    queries: Sequence[str],
    k: int = 10,
    mode: str = "hybrid",
    filters: Filter | Mapping[str, Any] | None = None,
    **fusion: Any,
) -> list[list[Hit]]:
    """The ``k`` best passages for each query; ``filters`` (a :class:`Filter` or its JSON form) restricts the
    documents; ``fusion`` overrides the index's hybrid settings (``method``, ``norm``, ``alpha``, ``rrf_k``,
    ``k0``)."""
    check_mode(mode)
    if k < 1:
        raise ConfigError(f"k must be at least 1, got {k}")
    flt = Filter.parse(filters)
    settings = resolve_fusion(index, fusion)
    k0 = max(settings.k0, k)
    live = [i for i, q in enumerate(queries) if q.strip()]
    out: list[list[Hit]] = [[] for _ in queries]
    if not live:
        return out
    if mode != "lexical":
        index.refresh_vectors()
    # Lexical mode never loads the model.
    qvecs = None if mode == "lexical" else index.encoder.encode([queries[i] for i in live], truncate=True)
    with index.meta.connect() as conn:
        scope = Scope.of(conn, flt, need_ids=qvecs is not None)
        for n, i in enumerate(live):
            query = queries[i]
            dense: dict[int, float] = {}
            lex: dict[int, float] = {}
            if qvecs is None:
                run = lexical.search(conn, query, k, scope.sql if scope else None)
                lex = dict(run)
            elif mode == "dense":
                run = index.vectors.search(qvecs[n], k, scope.ids if scope else None)
                dense = dict(run)
            else:
                cands = gather(index, conn, query, qvecs[n], k0, scope)
                dense, lex = cands.dense, cands.lexical
                run = fuse(cands, settings)[:k]
            out[i] = _hydrate(index, conn, run, dense, lex, mode)
    return out


def search(
    index: Index,
    query: str,
    k: int = 10,
    mode: str = "hybrid",
    filters: Filter | Mapping[str, Any] | None = None,
    **fusion: Any,
) -> list[Hit]:
    """The ``k`` best passages for ``query``; see :func:`search_batch`."""
    return search_batch(index, [query], k=k, mode=mode, filters=filters, **fusion)[0]


def _hydrate(
    index: Index, conn: Connection, run: Run, dense: dict[int, float], lex: dict[int, float], mode: str
) -> list[Hit]:
    records = index.meta.hydrate([pid for pid, _ in run], conn)
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
                lexical_score=lex.get(pid) if mode != "dense" else None, metadata=rec.metadata,
            )
        )
    return hits
