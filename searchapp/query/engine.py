"""Ranking queries: lexical, dense, or hybrid, over the stores it is given.

Hybrid takes ``k0`` candidates from each side and gives every candidate both real scores (the stores' reader
gathers them: a passage the lexical side did not return gets its BM25 score, 0 if it shares no term with the
query; one the dense side did not return gets its cosine from its stored vector). The fusion
(``query/fusion.py``) then ranks the candidates. Queries are encoded in batches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from typing import Any

import numpy as np

from searchapp.errors import ConfigError
from searchapp.filters import Filter
from searchapp.query.fusion import Fusion, fuse
from searchapp.query.snippets import QueryTerms, snippet
from searchapp.store.base import Reader, Stores
from searchapp.types import Hit, Run

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
        **fusion: Any,
    ) -> list[list[Hit]]:
        """The ``k`` best passages for each query; ``filters`` (a :class:`Filter` or its JSON form) restricts the
        documents; ``fusion`` overrides the hybrid settings (the fields of :class:`Fusion`)."""
        check_mode(mode)
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
                dense: dict[int, float] = {}
                lex: dict[int, float] = {}
                if qvecs is None:
                    run = reader.lexical(query, k)
                    lex = dict(run)
                elif mode == "dense":
                    run = reader.dense(qvecs[n], k)
                    dense = dict(run)
                else:
                    cands = reader.gather(query, qvecs[n], k0)
                    dense, lex = cands.dense, cands.lexical
                    run = fuse(cands, settings)[:k]
                out[i] = _hydrate(reader, run, dense, lex, mode, QueryTerms(query))
        return out


def _hydrate(
    reader: Reader, run: Run, dense: dict[int, float], lex: dict[int, float], mode: str, terms: QueryTerms
) -> list[Hit]:
    records = reader.hydrate([pid for pid, _ in run])
    hits: list[Hit] = []
    for pid, score in run:
        rec = records.get(pid)
        if rec is None:  # removed by a concurrent ingest after ranking
            continue
        shown, _ = snippet(terms, rec.text, rec.start)
        hits.append(
            Hit(
                rank=len(hits) + 1, score=score, passage_id=pid, path=rec.path, title=rec.title,
                start=rec.start, end=rec.end, text=rec.text,
                dense_score=dense.get(pid) if mode != "lexical" else None,
                lexical_score=lex.get(pid) if mode != "dense" else None, metadata=rec.metadata, source=rec.source,
                snippet=shown,
            )
        )
    return hits
