"""Fusion of a dense and a lexical run: pure functions with the literature's names.

A run is a list of ``(passage_id, score)``, best first. Hybrid ranking hands these functions *candidates*: the
union of both sides' top ``k0``, every candidate carrying its real score from each side (see
``query/engine.py``), so no function here ever guesses a missing score.

- Convex combination (Bruch et al. 2022): normalise each side, then ``alpha * dense + (1 - alpha) * lexical``;
  raw scores are never added. Normalisations: ``theoretical`` min-max (fixed lower bound: cosine -1, BM25 0;
  upper bound the best candidate), ``minmax`` over the candidates, ``zscore`` over the candidates.
- Reciprocal rank fusion (Cormack et al. 2009): ``sum_r w_r / (rrf_k + rank_r)``, ranks 1-based within each
  side's ordering of the candidates; ``rrf_k = 60``; weights default to 1.
- Adaptive convex combination (ours, docs/evaluation.md): ``alpha`` chosen per query by :func:`adaptive_alpha`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from searchapp.errors import ConfigError
from searchapp.query.adaptive import adaptive_alpha, adaptive_choice
from searchapp.query.rerank import reranker_names
from searchapp.setting import MAX_K, Setting, declared
from searchapp.store.rows import Candidates
from searchapp.types import BM25_MIN, COSINE_MIN, Run

Normaliser = Callable[[Mapping[int, float], Mapping[int, float]], tuple[dict[int, float], dict[int, float]]]
FusionMethod = Callable[[Candidates, "Fusion"], Run]
# Registration order is the order names are listed in (help, errors, the tuning grid).
_NORMS: dict[str, Normaliser] = {}
_METHODS: dict[str, FusionMethod] = {}


def register_norm(name: str) -> Callable[[Normaliser], Normaliser]:
    """Add a normalisation of both sides' candidate scores under ``name``."""

    def deco(fn: Normaliser) -> Normaliser:
        _NORMS[name] = fn
        return fn

    return deco


def register_method(name: str) -> Callable[[FusionMethod], FusionMethod]:
    """Add a fusion method (candidates, settings) -> run under ``name``."""

    def deco(fn: FusionMethod) -> FusionMethod:
        _METHODS[name] = fn
        return fn

    return deco


def norm_names() -> list[str]:
    """Registered normalisations."""
    return list(_NORMS)


def method_names() -> list[str]:
    """Registered fusion methods."""
    return list(_METHODS)


def check_reranker(name: Any) -> str:
    """``name`` if it names a registered reranker (``query/rerank.py``) or is ``""`` (none), else ``ConfigError``."""
    if not isinstance(name, str) or name not in reranker_names():
        registered = ", ".join(n for n in reranker_names() if n) or "none is registered"
        raise ConfigError(f"unknown reranker {name!r}: use '' for none, or a registered one ({registered})")
    return name


def _setting(default: Any, help: str, **bounds: Any) -> Any:
    """A fusion setting, declared once (setting.py): the CLI's help and the HTTP schema's description are both
    ``help``."""
    return Setting(default, help, doc=help, **bounds).field()


@dataclass(frozen=True)
class Fusion:
    """How a query's passages are ranked (``query/ranking.py``): how hybrid ranking fuses the two sides, how a
    rerank stage re-scores the best, how a ranking grouped by document weighs a document's passages. Stored in the
    index config; overridable per query.

    Each field is a :class:`~searchapp.setting.Setting` (help, choices, bounds), the one declaration that
    validation here, the CLI's fusion options and the HTTP API's ``fusion`` object are built from.
    """

    method: str = _setting("adaptive", "Hybrid fusion: {choices}", choices=method_names, label="fusion")
    norm: str = _setting("zscore", "Score normalisation: {choices}", choices=norm_names, label="normalisation")
    alpha: float = _setting(0.5, "Convex fusion: weight of the dense side", ge=0, le=1)
    rrf_k: int = _setting(60, "RRF constant", ge=0)
    k0: int = _setting(100, "Hybrid candidates taken from each side", ge=1, per_request=MAX_K)
    alpha_question: float = _setting(0.85, "Adaptive fusion: dense weight for questions", ge=0, le=1)
    alpha_statement: float = _setting(0.5, "Adaptive fusion: dense weight for other queries", ge=0, le=1)
    lexical_spread: float = _setting(
        1.0, "Adaptive fusion: below this spread of BM25 among the dense top 10 (in standard deviations of BM25 "
        "over the candidates) the lexical weight shrinks in proportion; 0 turns it off", ge=0)
    document_weight: float = _setting(
        0.5, "Hybrid ranking grouped by document: a document's score adds this times how far each of its next two "
        "best passages' fused scores pass document_threshold; 0 ranks a document by its best passage", ge=0,
        le=100)
    document_threshold: float = _setting(
        1.0, "Hybrid ranking grouped by document: the fused score (in standard deviations, under zscore) a "
        "document's further passages must pass to add to its score", ge=-100, le=100)
    rerank: str = Setting(
        "", "Rerank stage: the registered reranker that re-scores the best passages from their text ('' for none)",
        doc="Rerank stage: the registered reranker that re-scores the best passages from their text ('' for none)",
        parse=check_reranker).field()
    rerank_depth: int = _setting(20, "Rerank stage: how many of the best passages the reranker re-scores", ge=1,
                                 per_request=MAX_K)

    def __post_init__(self) -> None:
        for name, setting in SETTINGS.items():
            setting.check(getattr(self, name))

    def describe(self) -> str:
        """The settings that act under this method, in a few words (e.g. ``convex zscore alpha=0.8``)."""
        if self.method == "rrf":
            return f"rrf k={self.rrf_k}"
        if self.method == "convex":
            return f"convex {self.norm} alpha={self.alpha:g}"
        if self.method == "adaptive":
            return (f"adaptive {self.norm} question={self.alpha_question:g} statement={self.alpha_statement:g} "
                    f"spread={self.lexical_spread:g}")
        return self.method


# Every fusion setting by name, in declaration order (the order of the CLI's options and of the HTTP object).
SETTINGS: dict[str, Setting] = declared(Fusion)


def fuse(cands: Candidates, fusion: Fusion) -> Run:
    """Rank ``cands`` by ``fusion``'s method."""
    return _METHODS[fusion.method](cands, fusion)


@dataclass(frozen=True)
class Weighting:
    """How a fusion weighed one query's sides: the candidates' normalised scores and the dense weight with its
    reason (``None`` scores and weight for RRF, which fuses ranks)."""

    dense: dict[int, float] | None
    lexical: dict[int, float] | None
    alpha: float | None
    reason: str


def weighting(cands: Candidates, fusion: Fusion) -> Weighting:
    """What :func:`fuse` did with ``cands``, for an explanation: the same normalisation and the same weight rule
    (for adaptive fusion, :func:`adaptive_choice` and its reason), not a second account of them."""
    if fusion.method == "rrf":
        return Weighting(None, None, None, f"reciprocal rank fusion of both sides' ranks (k={fusion.rrf_k})")
    if fusion.method not in ("adaptive", "convex"):  # a method registered elsewhere: its settings, no more
        return Weighting(None, None, None, fusion.describe())
    dense, lexical = normalise(cands.dense, cands.lexical, fusion.norm)
    if fusion.method == "adaptive":
        choice = adaptive_choice(cands, fusion)
        return Weighting(dense, lexical, choice.alpha, choice.reason())
    return Weighting(dense, lexical, fusion.alpha, f"convex: the fixed dense weight {fusion.alpha:g}")


def theoretical_minmax(scores: Mapping[int, float], lower: float) -> dict[int, float]:
    """Map scores to [0, 1] with the retriever's theoretical minimum and the maximum observed.

    If every score equals the minimum the side carries no signal and all map to 0.
    """
    if not scores:
        return {}
    span = max(scores.values()) - lower
    if span <= 0:
        return dict.fromkeys(scores, 0.0)
    return {pid: (s - lower) / span for pid, s in scores.items()}


def minmax(scores: Mapping[int, float]) -> dict[int, float]:
    """Map scores to [0, 1] with the minimum and maximum over the candidates (all 0 if they are equal)."""
    if not scores:
        return {}
    return theoretical_minmax(scores, min(scores.values()))


def zscore(scores: Mapping[int, float]) -> dict[int, float]:
    """Standardise over the candidates: mean 0, population standard deviation 1 (all 0 if constant)."""
    if not scores:
        return {}
    values = list(scores.values())
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    if sd == 0:
        return dict.fromkeys(scores, 0.0)
    return {pid: (s - mean) / sd for pid, s in scores.items()}


@register_norm("theoretical")
def _theoretical(dense: Mapping[int, float], lexical: Mapping[int, float]) -> tuple[dict[int, float], dict[int, float]]:
    return theoretical_minmax(dense, COSINE_MIN), theoretical_minmax(lexical, BM25_MIN)


@register_norm("minmax")
def _minmax(dense: Mapping[int, float], lexical: Mapping[int, float]) -> tuple[dict[int, float], dict[int, float]]:
    return minmax(dense), minmax(lexical)


@register_norm("zscore")
def _zscore(dense: Mapping[int, float], lexical: Mapping[int, float]) -> tuple[dict[int, float], dict[int, float]]:
    return zscore(dense), zscore(lexical)


def normalise(
    dense: Mapping[int, float], lexical: Mapping[int, float], norm: str
) -> tuple[dict[int, float], dict[int, float]]:
    """Both sides normalised by the registered normalisation ``norm``."""
    if norm not in _NORMS:
        raise ConfigError(f"unknown normalisation '{norm}': use one of {', '.join(_NORMS)}")
    return _NORMS[norm](dense, lexical)


def convex(dense: Mapping[int, float], lexical: Mapping[int, float], alpha: float) -> Run:
    """``alpha * dense + (1 - alpha) * lexical`` over normalised scores of the same candidates.

    Both mappings must hold every candidate; the result is sorted best first, ties broken by passage id.
    """
    if set(dense) != set(lexical):
        raise ValueError("convex fusion needs both scores for every candidate")
    fused = [(pid, alpha * dense[pid] + (1.0 - alpha) * lexical[pid]) for pid in dense]
    return _sorted(fused)


def ranks(scores: Mapping[int, float]) -> dict[int, int]:
    """1-based ranks by descending score, ties broken by passage id."""
    return {pid: i + 1 for i, (pid, _) in enumerate(_sorted(list(scores.items())))}


def rrf(
    dense: Mapping[int, float],
    lexical: Mapping[int, float],
    rrf_k: int = 60,
    weights: tuple[float, float] = (1.0, 1.0),
) -> Run:
    """Weighted reciprocal rank fusion of the two sides' orderings of the candidates."""
    rd, rl = ranks(dense), ranks(lexical)
    pids = set(rd) | set(rl)
    big = len(pids) + 1  # a candidate absent from one side ranks after all of that side's
    fused = [
        (pid, weights[0] / (rrf_k + rd.get(pid, big)) + weights[1] / (rrf_k + rl.get(pid, big))) for pid in pids
    ]
    return _sorted(fused)


def _sorted(run: Run) -> Run:
    return sorted(run, key=lambda x: (-x[1], x[0]))


@register_method("adaptive")
def _adaptive(cands: Candidates, fusion: Fusion) -> Run:
    return convex(*normalise(cands.dense, cands.lexical, fusion.norm), adaptive_alpha(cands, fusion))


@register_method("convex")
def _convex(cands: Candidates, fusion: Fusion) -> Run:
    return convex(*normalise(cands.dense, cands.lexical, fusion.norm), fusion.alpha)


@register_method("rrf")
def _rrf(cands: Candidates, fusion: Fusion) -> Run:
    return rrf(cands.dense, cands.lexical, fusion.rrf_k)
