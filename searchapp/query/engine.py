"""Ranking queries against an index: lexical, dense, or hybrid.

Hybrid takes ``k0`` candidates from each side and gives every candidate both real scores: a passage the
lexical side did not return gets its BM25 score computed (0 if it shares no term with the query); one the
dense side did not return gets its cosine from its stored vector. The fusion (``query/fusion.py``) then ranks
the candidates. Queries are encoded in batches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Connection

from searchapp.config import check_mode
from searchapp.errors import ConfigError
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


def gather(index: Index, conn: Connection, query: str, qvec: np.ndarray, k0: int) -> Candidates:
    """Union of each side's top ``k0``, every candidate with its real dense and lexical score."""
    dense = dict(index.vectors.search(qvec, k0))
    run, known = lexical.search_and_score(conn, query, k0, list(dense))
    lex = dict(run)
    for pid, score in known.items():
        lex.setdefault(pid, score)
    dense.update(index.vectors.scores(qvec, [pid for pid in lex if pid not in dense]))
    for pid in lex:  # a candidate with no stored vector cannot rank above any real one
        dense.setdefault(pid, COSINE_MIN)
    return Candidates(query, dense, lex)


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
    index: Index, queries: Sequence[str], k: int = 10, mode: str = "hybrid", **fusion: Any
) -> list[list[Hit]]:
    """The ``k`` best passages for each query; ``fusion`` overrides the index's hybrid settings
    (``method``, ``norm``, ``alpha``, ``rrf_k``, ``k0``)."""
    check_mode(mode)
    if k < 1:
        raise ConfigError(f"k must be at least 1, got {k}")
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
        for n, i in enumerate(live):
            query = queries[i]
            dense: dict[int, float] = {}
            lex: dict[int, float] = {}
            if qvecs is None:
                run = lexical.search(conn, query, k)
                lex = dict(run)
            elif mode == "dense":
                run = index.vectors.search(qvecs[n], k)
                dense = dict(run)
            else:
                cands = gather(index, conn, query, qvecs[n], k0)
                dense, lex = cands.dense, cands.lexical
                run = fuse(cands, settings)[:k]
            out[i] = _hydrate(index, run, dense, lex, mode)
    return out


def search(index: Index, query: str, k: int = 10, mode: str = "hybrid", **fusion: Any) -> list[Hit]:
    """The ``k`` best passages for ``query``; see :func:`search_batch`."""
    return search_batch(index, [query], k=k, mode=mode, **fusion)[0]


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
