"""Ranking queries: lexical, dense, or hybrid, over the stores it is given.

Hybrid takes ``k0`` candidates from each side and gives every candidate both real scores (the stores' reader
gathers them: a passage the lexical side did not return gets its BM25 score, 0 if it shares no term with the
query; one the dense side did not return gets its cosine from its stored vector). The fusion
(``query/fusion.py``) then ranks the candidates. Queries are encoded in batches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from searchapp.errors import ConfigError
from searchapp.filters import Filter
from searchapp.query.fusion import Fusion, Weighting, fuse, weighting
from searchapp.query.snippets import QueryTerms, snippet
from searchapp.store.base import Reader, Stores
from searchapp.types import Explanation, Hit, Run

MODES = ("hybrid", "dense", "lexical")
# Queries -> float32 (n, d) unit vectors (truncated to the model's limit).
QueryEncoder = Callable[[list[str]], np.ndarray]


def check_mode(mode: str) -> str:
    """``mode`` if it is a ranking mode, else ``ConfigError`` listing the valid ones."""
    if mode not in MODES:
        raise ConfigError(f"unknown mode '{mode}': use one of {', '.join(MODES)}")
    return mode


def resolve_fusion(defaults: Fusion, overrides: Mapping[str, Any] | None) -> Fusion:
    """``defaults`` with per-query overrides (``None`` values ignored); ``ConfigError`` on an unknown name."""
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    valid = {f.name for f in fields(Fusion)}
    unknown = sorted(set(given) - valid)
    if unknown:
        raise ConfigError(f"unknown fusion setting {', '.join(unknown)}: use {', '.join(sorted(valid))}")
    return replace(defaults, **given)


def check_min_score(min_score: float | None, mode: str) -> None:
    """``ConfigError`` unless ``min_score`` is ``None`` or a cosine in [-1, 1] asked of a mode that computes one.

    The cut-off is on the cosine because it means the same for every query; fused scores are relative to the
    query's candidates and BM25 grows with the query's length and rare words. Lexical mode computes no cosine
    (it never loads the model), so a threshold there is refused rather than quietly ignored.
    """
    if min_score is None:
        return
    if isinstance(min_score, bool) or not isinstance(min_score, int | float) or not -1.0 <= min_score <= 1.0:
        raise ConfigError(f"min_score is a cosine, in [-1, 1]; got {min_score!r}")
    if mode == "lexical":
        raise ConfigError("min_score is a threshold on the cosine, which lexical mode does not compute: use mode "
                          "dense or hybrid")


class QueryEngine:
    """Searches ``stores``; ``encode`` embeds queries (called only in dense and hybrid mode, so a lexical query
    never loads the model); ``fusion`` is the index's hybrid default."""

    def __init__(self, stores: Stores, encode: QueryEncoder, fusion: Fusion) -> None:
        self.stores = stores
        self.encode = encode
        self.fusion = fusion

    def search_batch(
        self,
        queries: Sequence[str],
        k: int = 10,
        mode: str = "hybrid",
        filters: Filter | Mapping[str, Any] | None = None,
        explain: bool = False,
        min_score: float | None = None,
        **fusion: Any,
    ) -> list[list[Hit]]:
        """The ``k`` best passages for each query; ``filters`` (a :class:`Filter` or its JSON form) restricts the
        documents; ``explain`` gives every hit an :class:`Explanation`; ``min_score`` keeps only passages whose
        cosine with the query is at least that (dense and hybrid modes); ``fusion`` overrides the hybrid
        settings (the fields of :class:`Fusion`)."""
        check_mode(mode)
        check_min_score(min_score, mode)
        if isinstance(queries, str) or not all(isinstance(q, str) for q in queries):
            raise ConfigError("queries must be a list of strings (for one query, use search)")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"k must be a whole number of at least 1, got {k!r}")
        flt = Filter.parse(filters)
        settings = resolve_fusion(self.fusion, fusion)
        k0 = max(settings.k0, k)
        live = [i for i, q in enumerate(queries) if q.strip()]
        out: list[list[Hit]] = [[] for _ in queries]
        if not live:
            return out
        qvecs = None if mode == "lexical" else self.encode([queries[i] for i in live])
        with self.stores.reader(flt, dense=qvecs is not None) as reader:
            for n, i in enumerate(live):
                query = queries[i]
                ranked = _Ranked(mode)
                if qvecs is None:
                    ranked.run = reader.lexical(query, k)
                    ranked.lexical = dict(ranked.run)
                elif mode == "dense":
                    ranked.run = reader.dense(qvecs[n], k)
                    ranked.dense = dict(ranked.run)
                else:
                    cands = reader.gather(query, qvecs[n], k0)
                    ranked.dense, ranked.lexical = cands.dense, cands.lexical
                    ranked.run = fuse(cands, settings)
                    if explain:
                        ranked.weighting, ranked.fusion = weighting(cands, settings), settings.describe()
                if min_score is not None:
                    # Before the cut to k: up to k hits that pass, not the top k thinned.
                    ranked.run = [(pid, sc) for pid, sc in ranked.run if ranked.dense[pid] >= min_score]
                ranked.run = ranked.run[:k]
                out[i] = ranked.hits(reader, QueryTerms(query), explain)
        return out


@dataclass
class _Ranked:
    """One query's ranking and what its hits are made of: both sides' raw scores, and (hybrid, when explained)
    how the fusion weighed them."""

    mode: str
    run: Run = field(default_factory=list)
    dense: dict[int, float] = field(default_factory=dict)
    lexical: dict[int, float] = field(default_factory=dict)
    weighting: Weighting | None = None
    fusion: str = ""

    def hits(self, reader: Reader, terms: QueryTerms, explain: bool) -> list[Hit]:
        """The run hydrated into hits, with snippets (and explanations)."""
        records = reader.hydrate([pid for pid, _ in self.run])
        hits: list[Hit] = []
        for pid, score in self.run:
            rec = records.get(pid)
            if rec is None:  # removed by a concurrent ingest after ranking
                continue
            shown, found = snippet(terms, rec.text, rec.start)
            hits.append(
                Hit(
                    rank=len(hits) + 1, score=score, passage_id=pid, path=rec.path, title=rec.title,
                    start=rec.start, end=rec.end, text=rec.text,
                    dense_score=self.dense.get(pid) if self.mode != "lexical" else None,
                    lexical_score=self.lexical.get(pid) if self.mode != "dense" else None, metadata=rec.metadata,
                    source=rec.source, snippet=shown,
                    explain=self.explain(pid, tuple(terms.matched(found))) if explain else None,
                )
            )
        return hits

    def explain(self, pid: int, matched: tuple[str, ...]) -> Explanation:
        """Why ``pid`` ranks where it does."""
        dense = self.dense.get(pid) if self.mode != "lexical" else None
        lexical = self.lexical.get(pid) if self.mode != "dense" else None
        w = self.weighting
        if w is None:
            side = "BM25" if self.mode == "lexical" else "cosine"
            return Explanation(dense, lexical, None, None, None, self.mode, f"{self.mode} mode: ranked by {side} "
                               "alone", matched)
        return Explanation(
            dense, lexical, w.dense.get(pid) if w.dense else None, w.lexical.get(pid) if w.lexical else None,
            w.alpha, self.fusion, w.reason, matched,
        )
