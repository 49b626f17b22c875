"""Searching the hybrid fusion settings on labelled queries (``searchapp tune``), and checking that a tuned
setting transfers (``--cross-validate``).

Every setting is scored on the same gathered candidates, so the search costs one retrieval pass plus cheap
re-fusions. Bruch et al. (2022) found the convex weight sample-efficient: a few dozen queries settle it.

On several collections the setting chosen is the one whose *worst* margin over the better single retriever of
each collection is largest: a default has to hold on the collection it does worst on, not on average.
Cross-validation chooses on part of the data and scores on the rest: with several collections, leave one
collection out; with one, k folds of its queries. Each held-out part is reported with the paired per-query
difference to its better single retriever and a bootstrap interval (docs/evaluation.md).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from searchapp.evaluate.runner import Prepared
from searchapp.evaluate.stats import paired_bootstrap
from searchapp.query.fusion import Fusion, norm_names

ALPHAS = tuple(round(0.05 * i, 2) for i in range(21))
RRF_KS = (10, 30, 60, 100)
ALPHAS_QUESTION = (0.6, 0.7, 0.8, 0.9, 1.0)
ALPHAS_STATEMENT = (0.3, 0.4, 0.5, 0.6, 0.7)
SPREADS = (0.0, 1.0, 2.0)
FOLDS = 5


@dataclass(frozen=True)
class TuneResult:
    """The best setting found, its metric value, and every setting tried with its value (on several
    collections: the mean over them; the choice is by worst margin, see the module's docstring)."""

    best: Fusion
    metric: str
    value: float
    tried: list[tuple[Fusion, float]]


@dataclass(frozen=True)
class Fold:
    """One held-out part of a cross-validation: what was chosen without it and how that did on it."""

    held_out: str  # collection name, or "fold i/k" of one collection's queries
    queries: int
    chosen: Fusion
    value: float  # the chosen setting's mean metric on the held-out queries
    lexical: float
    dense: float
    default: float  # the shipped default's (Fusion()) value on the same queries
    margin: tuple[float, float, float]  # chosen - better single retriever: mean, 95% interval (paired bootstrap)


def grid(base: Fusion) -> Iterator[Fusion]:
    """Convex (each normalisation x alpha), RRF (each k) and adaptive (z-scores x its two weights x its spread
    threshold), at ``base.k0``."""
    for norm in norm_names():
        for alpha in ALPHAS:
            yield replace(base, method="convex", norm=norm, alpha=alpha)
    for k in RRF_KS:
        yield replace(base, method="rrf", rrf_k=k)
    for aq in ALPHAS_QUESTION:
        for as_ in ALPHAS_STATEMENT:
            for spread in SPREADS:
                yield replace(base, method="adaptive", norm="zscore", alpha_question=aq, alpha_statement=as_,
                              lexical_spread=spread)


class _Scores:
    """Per-query metric of every grid setting and of both single retrievers on one collection."""

    def __init__(self, prepared: Prepared, settings: Sequence[Fusion], metric: str) -> None:
        self.queries = sorted(prepared.per_query("lexical", metric=metric))
        order = self.queries

        def column(mode: str, fusion: Fusion | None = None) -> np.ndarray:
            values = prepared.per_query(mode, fusion, metric)
            return np.array([values[q] for q in order])

        self.lexical = column("lexical")
        self.dense = column("dense")
        self.default = column("hybrid", Fusion(k0=prepared.k0))
        self.settings = np.stack([column("hybrid", f) for f in settings])  # (settings, queries)

    def better_single(self, rows: np.ndarray) -> np.ndarray:
        """Per-query values (of ``rows``) of whichever single retriever has the higher mean there."""
        lex, den = self.lexical[rows], self.dense[rows]
        return lex if lex.mean() > den.mean() else den


def _choose(parts: Sequence[tuple[_Scores, np.ndarray]]) -> int:
    """Index of the setting with the largest worst margin over each part's better single retriever (ties: the
    first in grid order)."""
    worst = np.full(parts[0][0].settings.shape[0], np.inf)
    for scores, rows in parts:
        margin = scores.settings[:, rows].mean(axis=1) - scores.better_single(rows).mean()
        worst = np.minimum(worst, margin)
    return int(np.argmax(worst))


def tune(prepared: Prepared | Mapping[str, Prepared], metric: str = "ndcg@10") -> TuneResult:
    """The best setting of :func:`grid` on one collection (highest mean ``metric``) or on several (largest
    worst margin over each collection's better single retriever)."""
    parts = dict(prepared) if isinstance(prepared, Mapping) else {"": prepared}
    first = next(iter(parts.values()))
    settings = list(grid(replace(first.fusion, k0=first.k0)))
    scored = [_Scores(p, settings, metric) for p in parts.values()]
    everything = [(s, np.arange(len(s.queries))) for s in scored]
    best = _choose(everything)
    means = np.mean([s.settings.mean(axis=1) for s in scored], axis=0)
    return TuneResult(settings[best], metric, float(means[best]), list(zip(settings, means.tolist(), strict=True)))


def cross_validate(parts: Mapping[str, Prepared], metric: str = "ndcg@10", folds: int = FOLDS,
                   seed: int = 0, settings: Sequence[Fusion] | None = None) -> list[Fold]:
    """Choose a setting (of ``settings``, default :func:`grid`) without each held-out part and score it there:
    leave one collection out when ``parts`` has several, else ``folds`` random folds of the one collection's
    queries (fixed ``seed``)."""
    first = next(iter(parts.values()))
    settings = list(settings or grid(replace(first.fusion, k0=first.k0)))
    scored = {name: _Scores(p, settings, metric) for name, p in parts.items()}
    held: list[tuple[str, _Scores, np.ndarray, list[tuple[_Scores, np.ndarray]]]] = []
    if len(scored) > 1:
        for name, s in scored.items():
            train = [(o, np.arange(len(o.queries))) for n, o in scored.items() if n != name]
            held.append((name, s, np.arange(len(s.queries)), train))
    else:
        s = next(iter(scored.values()))
        n = len(s.queries)
        k = max(2, min(folds, n))
        order = list(range(n))
        random.Random(seed).shuffle(order)
        for i in range(k):
            test = np.array(sorted(order[i::k]), dtype=np.int64)
            train = np.setdiff1d(np.arange(n), test)
            held.append((f"fold {i + 1}/{k}", s, test, [(s, train)]))
    out = []
    for name, s, rows, train in held:
        best = _choose(train)
        chosen = s.settings[best, rows]
        out.append(Fold(
            held_out=name, queries=len(rows), chosen=settings[best], value=float(chosen.mean()),
            lexical=float(s.lexical[rows].mean()), dense=float(s.dense[rows].mean()),
            default=float(s.default[rows].mean()), margin=paired_bootstrap(chosen - s.better_single(rows)),
        ))
    return out
