"""Choosing fusion settings across collections, and the paired bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from searchapp.evaluate import tune as tune_module
from searchapp.evaluate.stats import paired_bootstrap
from searchapp.evaluate.tune import Fold, _choose
from searchapp.query.fusion import Fusion


class FakeScores:
    def __init__(self, settings: list[list[float]], lexical: list[float], dense: list[float]) -> None:
        self.settings = np.array(settings)
        self.lexical, self.dense = np.array(lexical), np.array(dense)

    def better_single(self, rows: np.ndarray) -> np.ndarray:
        lex, den = self.lexical[rows], self.dense[rows]
        return lex if lex.mean() > den.mean() else den


def test_a_setting_significantly_below_a_collections_better_retriever_is_not_chosen() -> None:
    # Setting 0 has the higher mean (it gains a lot on A) but loses to B's dense retriever; setting 1 never loses.
    a = FakeScores([[0.9, 0.9], [0.6, 0.6]], lexical=[0.5, 0.5], dense=[0.4, 0.4])
    b = FakeScores([[0.5, 0.5], [0.71, 0.71]], lexical=[0.3, 0.3], dense=[0.7, 0.7])
    both = [(a, np.arange(2)), (b, np.arange(2))]
    assert _choose(both) == 1
    assert _choose([(a, np.arange(2))]) == 0  # on one collection: the highest mean


def test_a_collection_on_which_no_setting_moves_does_not_choose_by_its_noise() -> None:
    # C: 30 noisy questions on which every setting ranks about as BM25 does (the worst lower bound is C's for
    # every setting, and setting 0's is the least bad by chance); A and B: setting 1 gains surely on both. The
    # worst part would choose setting 0; the mean over the parts chooses setting 1, which is below on no part.
    rng = np.random.default_rng(3)
    lexical = rng.uniform(0.5, 1.0, 30)
    noise = rng.normal(0, 0.05, (2, 30))
    noise[0] = np.abs(noise[0]) * 0.2  # setting 0: a little above BM25, by luck
    c = FakeScores((lexical + noise).tolist(), lexical=lexical.tolist(), dense=(lexical - 0.1).tolist())
    a = FakeScores([[0.6] * 10, [0.7] * 9 + [0.69]], lexical=[0.3] * 10, dense=[0.6] * 10)
    b = FakeScores([[0.5] * 10, [0.58] * 9 + [0.57]], lexical=[0.5] * 10, dense=[0.4] * 10)
    parts = [(a, np.arange(10)), (b, np.arange(10)), (c, np.arange(30))]
    worst = [min(float(tune_module.lower_margin(s.settings[i:i + 1] - s.better_single(r)[None, :])[0])
                 for s, r in parts) for i in range(2)]
    assert worst[0] > worst[1]  # the old rule's choice: setting 0
    assert _choose(parts) == 1


def test_paired_bootstrap_interval() -> None:
    assert paired_bootstrap(np.full(50, 0.02)) == pytest.approx((0.02, 0.02, 0.02))
    rng = np.random.default_rng(1)
    diffs = rng.normal(0.05, 0.2, 400)
    mean, lo, hi = paired_bootstrap(diffs)
    assert lo < mean < hi and mean == pytest.approx(diffs.mean())
    assert hi - lo == pytest.approx(2 * 1.96 * diffs.std() / np.sqrt(400), rel=0.15)
    assert paired_bootstrap(diffs) == (mean, lo, hi)  # the same seed, the same report
    assert paired_bootstrap(np.array([])) == (0.0, 0.0, 0.0)


def test_a_gain_chosen_is_one_its_queries_show_surely() -> None:
    # Setting 0 gains on average but by a few lucky queries (its lower bound is below 0); setting 1 ranks as the
    # dense retriever does (a margin of exactly 0): the choice is setting 1. By the mean it would be setting 0.
    dense = [0.5] * 10
    lucky = [0.5] * 8 + [0.9, 0.2]
    a = FakeScores([lucky, dense], lexical=[0.1] * 10, dense=dense)
    assert _choose([(a, np.arange(10))]) == 1
    sure = [0.55] * 10
    assert _choose([(FakeScores([lucky, dense, sure], lexical=[0.1] * 10, dense=dense), np.arange(10))]) == 2


class FakePrepared:
    """Per-query values by mode: hybrid equals dense for every setting but the default, which gains ``gain``."""

    def __init__(self, gain: float, n: int = 12) -> None:
        self.fusion, self.k0, self.gain, self.n = Fusion(), 100, gain, n

    def per_query(self, mode: str, fusion: Fusion | None = None, metric: str = "ndcg@10") -> dict[str, float]:
        base = {"lexical": 0.3, "dense": 0.6}.get(mode, 0.6)
        if mode == "hybrid" and fusion == Fusion():
            base += self.gain
        return {f"q{i}": base for i in range(self.n)}


def _fold(margin: float, queries: int = 6) -> Fold:
    return Fold("part", queries, Fusion(method="rrf"), 0.0, 0.0, 0.0, 0.0, (margin, margin, margin))


@pytest.mark.parametrize(("margins", "default_gain", "rung"), [
    ([0.01, -0.005], 0.0, "tuned"),  # one collection: folds pooled, +0.0025
    ([0.01, -0.02], 0.01, "default"),  # lost pooled; the default is not below dense here
    ([0.01, -0.02], -0.01, "single"),  # and neither is the default: dense itself
])
def test_tune_recommends_its_choice_only_where_it_held_out(monkeypatch: pytest.MonkeyPatch, margins: list[float],
                                                            default_gain: float, rung: str) -> None:
    monkeypatch.setattr(tune_module, "_held_out", lambda *a: [_fold(m) for m in margins])
    result = tune_module.tune(FakePrepared(default_gain))  # type: ignore[arg-type]
    assert result.rung == rung and result.reason
    assert len(result.checked) == 2 and result.tuned is not None
    if rung == "default":
        assert result.best == Fusion() and result.value == pytest.approx(0.61)
    if rung == "single":
        # The better single retriever (dense here) as the hybrid setting that ranks as it does.
        assert (result.best.method, result.best.norm, result.best.alpha) == ("convex", "zscore", 1.0)
        assert result.value == pytest.approx(0.6)
