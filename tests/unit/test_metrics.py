"""Metric code against trec_eval (pytrec-eval-terrier) on a small graded run, and by hand."""

from __future__ import annotations

import numpy as np
import pytest

from searchapp.evaluate.metrics import (
    average_precision,
    evaluate,
    first_relevant,
    known_item,
    mrr,
    ndcg,
    rankdata,
    recall,
    spearman,
    success,
)


def test_ndcg_by_hand() -> None:
    rels = {"a": 2, "b": 1}
    # ranking b, x, a: dcg = 1/log2(2) + 2/log2(4) = 2; ideal = 2 + 1/log2(3)
    assert ndcg(["b", "x", "a"], rels, 10) == pytest.approx(2 / (2 + 1 / np.log2(3)))
    assert ndcg(["x"], {}, 10) == 0.0


def test_mrr_recall_ap_by_hand() -> None:
    rels = {"a": 1, "b": 1, "c": 0}
    ranked = ["c", "a", "x", "b"]
    assert mrr(ranked, rels, 10) == 0.5
    assert mrr(ranked, rels, 1) == 0.0
    assert recall(ranked, rels, 2) == 0.5
    assert average_precision(ranked, rels, 100) == pytest.approx((1 / 2 + 2 / 4) / 2)


def test_known_item_metrics_by_hand() -> None:
    rels = {"a": 1, "b": 1, "c": 0}  # any one target answers; a grade-0 document is no target
    assert first_relevant(["c", "x", "b", "a"], rels) == 3
    assert first_relevant(["c", "x"], rels) is None and first_relevant([], rels) is None
    assert success(["c", "x", "b"], rels, 3) == 1.0
    assert success(["c", "x", "b"], rels, 2) == 0.0
    run = {"q1": ["a", "x"], "q2": ["x", "y", "b"], "q3": ["x"] * 6 + ["a"], "q4": []}
    qrels = {q: {"a": 1, "b": 1} for q in run} | {"unjudged": {"a": 0}}
    got = known_item(run, qrels)
    assert (got["hits@1"], got["hits@5"]) == (1, 2)  # q1 first, q2 third, q3 seventh, q4 nothing
    assert got["success@1"] == pytest.approx(1 / 4) and got["success@5"] == pytest.approx(2 / 4)
    assert got["mrr@10"] == pytest.approx((1 + 1 / 3 + 1 / 7) / 4)
    assert known_item({}, {}) == {"success@1": 0.0, "success@5": 0.0, "mrr@10": 0.0, "hits@1": 0, "hits@5": 0}


def test_against_trec_eval() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(0)
    docs = [f"d{i}" for i in range(150)]
    qrels = {}
    runs = {}
    for q in range(8):
        judged = rng.choice(docs, size=12, replace=False)
        qrels[f"q{q}"] = {d: int(rng.integers(0, 3)) for d in judged}
        ranked = list(rng.permutation(docs)[:120])
        runs[f"q{q}"] = ranked
    qrels["q_empty"] = {"d1": 0}
    runs["q_empty"] = docs[:5]
    ours, skipped = evaluate(runs, qrels)
    assert skipped == 1
    judged_q = [q for q in qrels if q != "q_empty"]

    def scored(cut: int) -> dict[str, dict[str, float]]:
        return {q: {d: float(len(r) - i) for i, d in enumerate(r[:cut])} for q, r in runs.items() if q in judged_q}

    ev = pytrec_eval.RelevanceEvaluator(
        {q: qrels[q] for q in judged_q}, {"ndcg_cut.10", "recall.100", "map_cut.100"}
    )
    ref = ev.evaluate(scored(1000))
    mrr_ref = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in judged_q}, {"recip_rank"}).evaluate(scored(10))
    assert ours["ndcg@10"] == pytest.approx(np.mean([ref[q]["ndcg_cut_10"] for q in judged_q]), abs=1e-6)
    assert ours["recall@100"] == pytest.approx(np.mean([ref[q]["recall_100"] for q in judged_q]), abs=1e-6)
    assert ours["map@100"] == pytest.approx(np.mean([ref[q]["map_cut_100"] for q in judged_q]), abs=1e-6)
    assert ours["mrr@10"] == pytest.approx(np.mean([mrr_ref[q]["recip_rank"] for q in judged_q]), abs=1e-6)


def test_spearman_with_ties() -> None:
    assert list(rankdata(np.array([3.0, 1.0, 3.0, 2.0]))) == [3.5, 1.0, 3.5, 2.0]
    assert spearman(np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])) == pytest.approx(1.0)
    assert spearman(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])) == pytest.approx(-1.0)
    a = np.array([1.0, 2.0, 2.0, 5.0, 3.0])
    b = np.array([2.0, 1.0, 4.0, 5.0, 5.0])
    # reference value from the definition: Pearson correlation of average ranks
    ra, rb = rankdata(a), rankdata(b)
    assert spearman(a, b) == pytest.approx(float(np.corrcoef(ra, rb)[0, 1]))
