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
from collections.abc import Mapping
from dataclasses import dataclass

from searchapp.errors import ConfigError

Run = list[tuple[int, float]]

COSINE_MIN = -1.0
BM25_MIN = 0.0
METHODS = ("adaptive", "convex", "rrf")
NORMS = ("theoretical", "minmax", "zscore")


@dataclass(frozen=True)
class Fusion:
    """How hybrid ranking fuses the two sides. Stored in the index config; overridable per query."""

    method: str = "adaptive"
    norm: str = "zscore"
    alpha: float = 0.5
    rrf_k: int = 60
    k0: int = 100
    alpha_question: float = 0.8
    alpha_statement: float = 0.5

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"unknown fusion '{self.method}': use one of {', '.join(METHODS)}")
        if self.norm not in NORMS:
            raise ConfigError(f"unknown normalisation '{self.norm}': use one of {', '.join(NORMS)}")
        for name in ("alpha", "alpha_question", "alpha_statement"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"{name} must be in [0, 1], got {value}")
        if self.rrf_k < 0:
            raise ConfigError(f"rrf_k must be >= 0, got {self.rrf_k}")
        if self.k0 < 1:
            raise ConfigError(f"k0 must be at least 1, got {self.k0}")


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


def normalise(
    dense: Mapping[int, float], lexical: Mapping[int, float], norm: str
) -> tuple[dict[int, float], dict[int, float]]:
    """Both sides normalised by ``norm`` (one of ``NORMS``)."""
    if norm == "theoretical":
        return theoretical_minmax(dense, COSINE_MIN), theoretical_minmax(lexical, BM25_MIN)
    if norm == "minmax":
        return minmax(dense), minmax(lexical)
    if norm == "zscore":
        return zscore(dense), zscore(lexical)
    raise ConfigError(f"unknown normalisation '{norm}': use one of {', '.join(NORMS)}")


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
