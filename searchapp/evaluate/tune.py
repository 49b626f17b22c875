"""Searching the hybrid fusion settings on labelled queries (``searchapp tune``), and checking that a tuned
setting transfers (``--cross-validate``).

Every setting is scored on the same gathered candidates, so the search costs one retrieval pass plus cheap
re-fusions. Bruch et al. (2022) found the convex weight sample-efficient: a few dozen queries settle it.

The setting chosen is, among those significantly below the better single retriever on no collection, the one
whose margins over each collection's better single retriever have the largest mean (on one collection, its margin
there), a margin counted by its one-sided 95% lower bound: a default has to hold on every collection, and on
queries it was not chosen on. Cross-validation chooses on part of the data and scores on the rest: with several
collections, leave one collection out; with one, k folds of its queries. Each held-out part is reported with the
paired per-query difference to its better single retriever and to the shipped default, each with a bootstrap
interval (docs/evaluation.md). :func:`tune` recommends its choice only where the same choice, made without each
held-out part, did not lose there; else the shipped default or the better single retriever.
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
Z_LOWER = 1.645  # one-sided 95%


@dataclass(frozen=True)
class TuneResult:
    """The setting recommended, its metric value, and every setting tried with its value (on several
    collections: the mean over them; the choice is by the margins' lower bounds, see :func:`_choose`).

    ``tuned`` is the grid's choice on all the queries; ``checked`` how the same choice did on held-out parts
    (:func:`cross_validate`); ``rung`` which setting is recommended: ``"tuned"`` where the tuned choice held on
    every held-out part, else ``"default"`` (the shipped default, where it is not below the better single retriever
    anywhere on these queries) or ``"single"`` (the better single retriever, as the hybrid setting that ranks as
    it does); ``reason`` says why in a line.
    """

    best: Fusion
    metric: str
    value: float
    tried: list[tuple[Fusion, float]]
    tuned: Fusion | None = None
    checked: tuple[Fold, ...] = ()
    rung: str = "tuned"
    reason: str = ""


@dataclass(frozen=True)
class Fold:
    """One held-out part of a cross-validation: what was chosen without it and how that did on it."""

    held_out: str  # collection name, or "fold i/k" of one collection's queries
    queries: int
    chosen: Fusion
    value: float  # the chosen setting's mean metric on the held-out queries
    lexical: float
    dense: float
    default: float  # the shipped default's (Fusion(), or the one given) value on the same queries
    margin: tuple[float, float, float]  # chosen - better single retriever: mean, 95% interval (paired bootstrap)
    against_default: tuple[float, float, float] = (0.0, 0.0, 0.0)  # chosen - the shipped default: the same


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

    def __init__(self, prepared: Prepared, settings: Sequence[Fusion], metric: str,
                 default: Fusion | None = None) -> None:
        self.queries = sorted(prepared.per_query("lexical", metric=metric))
        order = self.queries

        def column(mode: str, fusion: Fusion | None = None) -> np.ndarray:
            values = prepared.per_query(mode, fusion, metric)
            return np.array([values[q] for q in order])

        self.lexical = column("lexical")
        self.dense = column("dense")
        self.default = column("hybrid", replace(default or Fusion(), k0=prepared.k0))
        self.settings = np.stack([column("hybrid", f) for f in settings])  # (settings, queries)

    def better_single(self, rows: np.ndarray) -> np.ndarray:
        """Per-query values (of ``rows``) of whichever single retriever has the higher mean there."""
        lex, den = self.lexical[rows], self.dense[rows]
        return lex if lex.mean() > den.mean() else den


def lower_margin(diffs: np.ndarray) -> np.ndarray:
    """One-sided 95% lower bound of the mean of each row's per-query differences (float ``(settings, queries)``
    -> ``(settings,)``): the mean less :data:`Z_LOWER` standard errors."""
    return _bound(diffs, -Z_LOWER)


def upper_margin(diffs: np.ndarray) -> np.ndarray:
    """One-sided 95% upper bound of the mean of each row's per-query differences (float ``(settings, queries)``
    -> ``(settings,)``): below 0, the row is significantly below what it is compared with."""
    return _bound(diffs, Z_LOWER)


def _bound(diffs: np.ndarray, z: float) -> np.ndarray:
    n = diffs.shape[-1]
    if n < 2:
        return diffs.mean(axis=-1)
    return diffs.mean(axis=-1) + z * diffs.std(axis=-1, ddof=1) / np.sqrt(n)


def _choose(parts: Sequence[tuple[_Scores, np.ndarray]]) -> int:
    """Index of the setting to choose on ``parts``: among the settings significantly below the better single
    retriever on no part (:func:`upper_margin` at least 0 on each), the one whose margins over each part's better
    single retriever, each counted by its lower bound (:func:`lower_margin`), have the largest mean over the
    parts (on one part, its lower bound there); ties: the first in grid order. Where every setting is
    significantly below somewhere, the one whose worst upper bound is highest.

    By the lower bound, not the mean: the best mean of a grid of close settings is partly luck (the winner's
    curse), and it is the held-out queries a choice must hold on. A setting that ranks as the better single
    retriever has the bound 0, so a hybrid setting is chosen only for a gain its queries show surely. By the mean
    over the parts, not the worst part: a part of a few dozen questions where every setting's mean equals the
    better single retriever's (a folder where hybrid gains on as many questions as it loses) has the lowest bound for
    every setting, and the worst part would then choose by its noise alone (docs/evaluation.md, "Choosing a
    default")."""
    n = parts[0][0].settings.shape[0]
    total, worst_upper = np.zeros(n), np.full(n, np.inf)
    for scores, rows in parts:
        diffs = scores.settings[:, rows] - scores.better_single(rows)[None, :]
        total += lower_margin(diffs)
        worst_upper = np.minimum(worst_upper, upper_margin(diffs))
    feasible = worst_upper >= 0
    if not feasible.any():
        return int(np.argmax(worst_upper))
    return int(np.argmax(np.where(feasible, total, -np.inf)))


def tune(prepared: Prepared | Mapping[str, Prepared], metric: str = "ndcg@10", folds: int = FOLDS,
         seed: int = 0) -> TuneResult:
    """The setting of :func:`grid` to recommend on one collection or several (:func:`_choose`), checked by
    :func:`cross_validate`: where the choice lost to the better single retriever on a held-out part, the shipped
    default is recommended if it is not below the better single retriever on any collection here, else the better
    single retriever."""
    parts = dict(prepared) if isinstance(prepared, Mapping) else {"": prepared}
    first = next(iter(parts.values()))
    base = replace(first.fusion, k0=first.k0)
    settings = list(grid(base))
    scored = {name: _Scores(p, settings, metric) for name, p in parts.items()}
    everything = [(s, np.arange(len(s.queries))) for s in scored.values()]
    chosen = _choose(everything)
    means = np.mean([s.settings.mean(axis=1) for s in scored.values()], axis=0)
    tried = list(zip(settings, means.tolist(), strict=True))
    checked = tuple(_held_out(scored, settings, folds, seed))
    tuned = settings[chosen]
    lost = _losses(checked, pooled=len(scored) == 1)
    if not lost:
        return TuneResult(tuned, metric, float(means[chosen]), tried, tuned, checked, "tuned",
                          f"the tuned setting held on all {len(checked)} held-out parts")
    where = ", ".join(f"{part} {margin:+.4f}" for part, margin in lost)
    default_margin = min(float(s.default.mean() - s.better_single(np.arange(len(s.queries))).mean())
                         for s in scored.values())
    if default_margin >= 0:
        value = float(np.mean([s.default.mean() for s in scored.values()]))
        return TuneResult(replace(Fusion(), k0=base.k0), metric, value, tried, tuned, checked, "default",
                          f"the tuned setting lost to the better single retriever held out ({where}); the shipped "
                          f"default is not below it on any collection here (worst margin {default_margin:+.4f})")
    single, value = _better_single(base, scored)
    return TuneResult(single, metric, value, tried, tuned, checked, "single",
                      f"the tuned setting lost to the better single retriever held out ({where}), and so does the "
                      f"shipped default here (worst margin {default_margin:+.4f}): the better single retriever")


def choose_on(parts: Mapping[str, Prepared], settings: Sequence[Fusion], metric: str = "ndcg@10") -> Fusion:
    """The setting of ``settings`` that :func:`tune`'s rule chooses on all of ``parts`` (no held-out check)."""
    scored = [_Scores(p, settings, metric) for p in parts.values()]
    return settings[_choose([(s, np.arange(len(s.queries))) for s in scored])]


def _losses(checked: Sequence[Fold], pooled: bool) -> list[tuple[str, float]]:
    """``(part, margin)`` where the choice made without a held-out part lost to the better single retriever
    there: for folds of one collection their pooled margin (every query held out once; one fold of a few dozen
    queries is noise), else each collection's."""
    if not pooled:
        return [(f.held_out, f.margin[0]) for f in checked if f.margin[0] < 0]
    queries = sum(f.queries for f in checked)
    mean = sum(f.margin[0] * f.queries for f in checked) / max(queries, 1)
    return [] if mean >= 0 else [(f"{len(checked)} folds pooled", mean)]


def _better_single(base: Fusion, scored: Mapping[str, _Scores]) -> tuple[Fusion, float]:
    """The single retriever with the best worst margin over the collections, as the hybrid setting that ranks as
    it does (z-scored convex with all the weight on it), and its mean value."""
    options = []
    for mode, alpha in (("dense", 1.0), ("lexical", 0.0)):
        worst = min(float(getattr(s, mode).mean() - s.better_single(np.arange(len(s.queries))).mean())
                    for s in scored.values())
        value = float(np.mean([getattr(s, mode).mean() for s in scored.values()]))
        options.append((worst, value, replace(base, method="convex", norm="zscore", alpha=alpha)))
    worst, value, fusion = max(options, key=lambda o: (o[0], o[1]))
    return fusion, value


def cross_validate(parts: Mapping[str, Prepared], metric: str = "ndcg@10", folds: int = FOLDS,
                   seed: int = 0, settings: Sequence[Fusion] | None = None,
                   default: Fusion | None = None) -> list[Fold]:
    """Choose a setting (of ``settings``, default :func:`grid`) without each held-out part and score it there:
    leave one collection out when ``parts`` has several, else ``folds`` random folds of the one collection's
    queries (fixed ``seed``). Each fold compares the choice with ``default`` (else the shipped ``Fusion()``)."""
    first = next(iter(parts.values()))
    settings = list(settings or grid(replace(first.fusion, k0=first.k0)))
    scored = {name: _Scores(p, settings, metric, default) for name, p in parts.items()}
    return _held_out(scored, settings, folds, seed)


def _held_out(scored: Mapping[str, _Scores], settings: Sequence[Fusion], folds: int, seed: int) -> list[Fold]:
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
            against_default=paired_bootstrap(chosen - s.default[rows]),
        ))
    return out
