"""Choosing fusion settings across collections, and the paired bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from searchapp.evaluate.stats import paired_bootstrap
from searchapp.evaluate.tune import _choose


class FakeScores:
    def __init__(self, settings: list[list[float]], lexical: list[float], dense: list[float]) -> None:
        self.settings = np.array(settings)
        self.lexical, self.dense = np.array(lexical), np.array(dense)

    def better_single(self, rows: np.ndarray) -> np.ndarray:
        lex, den = self.lexical[rows], self.dense[rows]
        return lex if lex.mean() > den.mean() else den


def test_the_setting_chosen_across_collections_is_the_one_with_the_best_worst_margin() -> None:
    # Setting 0 has the higher mean (it gains a lot on A) but loses to B's dense retriever; setting 1 never loses.
    a = FakeScores([[0.9, 0.9], [0.6, 0.6]], lexical=[0.5, 0.5], dense=[0.4, 0.4])
    b = FakeScores([[0.5, 0.5], [0.71, 0.71]], lexical=[0.3, 0.3], dense=[0.7, 0.7])
    both = [(a, np.arange(2)), (b, np.arange(2))]
    assert _choose(both) == 1
    assert _choose([(a, np.arange(2))]) == 0  # on one collection: the highest mean


def test_paired_bootstrap_interval() -> None:
    assert paired_bootstrap(np.full(50, 0.02)) == pytest.approx((0.02, 0.02, 0.02))
    rng = np.random.default_rng(1)
    diffs = rng.normal(0.05, 0.2, 400)
    mean, lo, hi = paired_bootstrap(diffs)
    assert lo < mean < hi and mean == pytest.approx(diffs.mean())
    assert hi - lo == pytest.approx(2 * 1.96 * diffs.std() / np.sqrt(400), rel=0.15)
    assert paired_bootstrap(diffs) == (mean, lo, hi)  # the same seed, the same report
    assert paired_bootstrap(np.array([])) == (0.0, 0.0, 0.0)
