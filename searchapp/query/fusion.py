"""Fusion of ranked runs: pure functions with the literature's names.

A run is a list of ``(passage_id, score)``, best first. Convex combination follows Bruch et al. (2022):
normalise each side, then ``alpha * dense + (1 - alpha) * lexical``; raw scores are never added.
"""

from __future__ import annotations

from collections.abc import Mapping

Run = list[tuple[int, float]]

# Lower bounds of each retriever's score range, for theoretical min-max normalisation.
COSINE_MIN = -1.0
BM25_MIN = 0.0


def theoretical_minmax(scores: Mapping[int, float], lower: float) -> dict[int, float]:
    """Map scores to [0, 1] with the retriever's theoretical minimum and the maximum observed.

    If every score equals the minimum the side carries no signal and all map to 0.
    """
    if not scores:
        return {}
    top = max(scores.values())
    span = top - lower
    if span <= 0:
        return dict.fromkeys(scores, 0.0)
    return {pid: (s - lower) / span for pid, s in scores.items()}


def convex(
    dense: Mapping[int, float], lexical: Mapping[int, float], alpha: float
) -> Run:
    """``alpha * dense + (1 - alpha) * lexical`` over normalised scores of the same candidates.

    Both mappings must hold every candidate (the caller computes each side's real score for candidates the
    other side found); the result is sorted best first, ties broken by passage id for determinism.
    """
    if set(dense) != set(lexical):
        raise ValueError("convex fusion needs both scores for every candidate")
    fused = [(pid, alpha * dense[pid] + (1.0 - alpha) * lexical[pid]) for pid in dense]
    fused.sort(key=lambda x: (-x[1], x[0]))
    return fused
