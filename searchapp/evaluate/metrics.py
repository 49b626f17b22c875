"""Retrieval and similarity metrics: pure functions on runs, qrels and score lists.

A run maps query id -> ranked list of document ids (best first); qrels map query id -> {doc id: grade}, with
grade > 0 relevant. Definitions follow trec_eval: nDCG with linear gains (grade) and log2 discounts, the ideal
ranking from all judged relevant documents; MRR@k the reciprocal rank of the first relevant document within k;
Recall@k the share of relevant documents within k; AP@k the sum of precision at each relevant rank within k
over the number of relevant documents. Known-item questions (one answer, any of a few target documents) are
scored by the rank of their first target: success@k (a target within k) and MRR@k.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

Qrels = Mapping[str, Mapping[str, int]]


def ndcg(ranked: Sequence[str], rels: Mapping[str, int], k: int) -> float:
    """nDCG@k of one ranking."""
    dcg = sum(max(rels.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in rels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def mrr(ranked: Sequence[str], rels: Mapping[str, int], k: int) -> float:
    """Reciprocal rank of the first relevant document within k (0 if none)."""
    for i, d in enumerate(ranked[:k]):
        if rels.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def first_relevant(ranked: Sequence[str], rels: Mapping[str, int]) -> int | None:
    """1-based rank of the first relevant document in ``ranked``, ``None`` if there is none."""
    for i, d in enumerate(ranked):
        if rels.get(d, 0) > 0:
            return i + 1
    return None


def success(ranked: Sequence[str], rels: Mapping[str, int], k: int) -> float:
    """1.0 if a relevant document is within k, else 0.0 (success@k, a.k.a. hit rate)."""
    rank = first_relevant(ranked[:k], rels)
    return 1.0 if rank is not None else 0.0


def recall(ranked: Sequence[str], rels: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents found within k."""
    relevant = {d for d, g in rels.items() if g > 0}
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def average_precision(ranked: Sequence[str], rels: Mapping[str, int], k: int) -> float:
    """AP@k, normalised by the number of relevant documents (as trec_eval's map_cut)."""
    n_rel = sum(1 for g in rels.values() if g > 0)
    if n_rel == 0:
        return 0.0
    hits, total = 0, 0.0
    for i, d in enumerate(ranked[:k]):
        if rels.get(d, 0) > 0:
            hits += 1
            total += hits / (i + 1)
    return total / n_rel


METRICS = {
    "ndcg@10": lambda r, q: ndcg(r, q, 10),
    "mrr@10": lambda r, q: mrr(r, q, 10),
    "recall@100": lambda r, q: recall(r, q, 100),
    "map@100": lambda r, q: average_precision(r, q, 100),
}


# Known-item questions: scored apart from METRICS so that the benchmark's JSON keys stay as documented.
KNOWN_ITEM_METRICS = {
    "success@1": lambda r, q: success(r, q, 1),
    "success@5": lambda r, q: success(r, q, 5),
    "mrr@10": lambda r, q: mrr(r, q, 10),
}


def known_item(run: Mapping[str, Sequence[str]], qrels: Qrels) -> dict[str, float | int]:
    """Every :data:`KNOWN_ITEM_METRICS` mean over the judged queries of ``qrels`` (0.0 for none), and how many
    queries succeeded at each cut-off (``hits@1``, ``hits@5``: the counts behind success@1 and success@5)."""
    import numpy as np  # here, not at import: a command that only names the metrics loads no numpy

    judged = judged_queries(qrels)
    per = {name: [fn(list(run.get(q, [])), qrels[q]) for q in judged] for name, fn in KNOWN_ITEM_METRICS.items()}
    out: dict[str, float | int] = {name: float(np.mean(v)) if v else 0.0 for name, v in per.items()}
    for name in ("success@1", "success@5"):
        out["hits@" + name.partition("@")[2]] = int(sum(per[name]))
    return out


def judged_queries(qrels: Qrels) -> list[str]:
    """Query ids with at least one relevant document (the only ones the metrics average over)."""
    return [q for q, rels in qrels.items() if any(g > 0 for g in rels.values())]


def per_query(run: Mapping[str, Sequence[str]], qrels: Qrels, metric: str) -> dict[str, float]:
    """``metric`` of every judged query (for paired comparisons and cross-validation)."""
    fn = METRICS[metric]
    return {q: fn(list(run.get(q, [])), qrels[q]) for q in judged_queries(qrels)}


def evaluate(run: Mapping[str, Sequence[str]], qrels: Qrels) -> tuple[dict[str, float], int]:
    """Mean of each metric over queries with at least one relevant document; also the number skipped."""
    import numpy as np  # here, not at import: a command that only names the metrics loads no numpy

    judged = judged_queries(qrels)
    skipped = len(qrels) - len(judged)
    if not judged:
        return dict.fromkeys(METRICS, 0.0), skipped
    out = {
        name: float(np.mean([fn(list(run.get(q, [])), qrels[q]) for q in judged]))
        for name, fn in METRICS.items()
    }
    return out, skipped


def rankdata(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank: float64 ``(n,)``."""
    import numpy as np  # here, not at import: a command that only names the metrics loads no numpy

    x = np.asarray(x)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    sorted_x = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sorted_x[j + 1] == sorted_x[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (Pearson of average-tie ranks)."""
    ra, rb = rankdata(a), rankdata(b)
    ra -= ra.mean()
    rb -= rb.mean()
    denom = math.sqrt(float((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum() / denom) if denom > 0 else 0.0
