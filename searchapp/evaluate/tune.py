"""Searching the hybrid fusion settings on labelled queries (``searchapp tune``).

Every setting is scored on the same gathered candidates, so the search costs one retrieval pass plus cheap
re-fusions. Bruch et al. (2022) found the convex weight sample-efficient: a few dozen queries settle it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from searchapp.evaluate.runner import Prepared
from searchapp.query.fusion import Fusion, norm_names

ALPHAS = tuple(round(0.05 * i, 2) for i in range(21))
RRF_KS = (10, 30, 60, 100)
ALPHAS_QUESTION = (0.6, 0.7, 0.8, 0.9, 1.0)
ALPHAS_STATEMENT = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


@dataclass(frozen=True)
class TuneResult:
    """The best setting found, its metric value, and every setting tried with its value."""

    best: Fusion
    metric: str
    value: float
    tried: list[tuple[Fusion, float]]


def grid(base: Fusion) -> Iterator[Fusion]:
    """Convex (each normalisation x alpha), RRF (each k) and adaptive (each normalisation x its two weights),
    at ``base.k0``."""
    for norm in norm_names():
        for alpha in ALPHAS:
            yield replace(base, method="convex", norm=norm, alpha=alpha)
    for k in RRF_KS:
        yield replace(base, method="rrf", rrf_k=k)
    for norm in norm_names():
        for aq in ALPHAS_QUESTION:
            for as_ in ALPHAS_STATEMENT:
                yield replace(base, method="adaptive", norm=norm, alpha_question=aq, alpha_statement=as_)


def tune(prepared: Prepared, metric: str = "ndcg@10") -> TuneResult:
    """Score every setting of :func:`grid` and return the best (ties: the first in grid order)."""
    base = replace(prepared.fusion, k0=prepared.k0)
    tried = [(f, prepared.score("hybrid", f)[metric]) for f in grid(base)]
    best, value = max(tried, key=lambda x: x[1])
    return TuneResult(best, metric, value, tried)
