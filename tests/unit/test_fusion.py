import pytest

from searchapp.query.fusion import BM25_MIN, COSINE_MIN, convex, theoretical_minmax


def test_theoretical_minmax_uses_fixed_lower_bound_and_observed_max() -> None:
    out = theoretical_minmax({1: 0.5, 2: 0.0, 3: -1.0}, COSINE_MIN)
    assert out == pytest.approx({1: 1.0, 2: 2 / 3, 3: 0.0})
    out = theoretical_minmax({1: 8.0, 2: 2.0, 3: 0.0}, BM25_MIN)
    assert out == pytest.approx({1: 1.0, 2: 0.25, 3: 0.0})


def test_theoretical_minmax_degenerate_side_carries_no_signal() -> None:
    assert theoretical_minmax({1: 0.0, 2: 0.0}, BM25_MIN) == {1: 0.0, 2: 0.0}
    assert theoretical_minmax({}, BM25_MIN) == {}


def test_convex_weights_and_orders() -> None:
    dense = {1: 1.0, 2: 0.5, 3: 0.0}
    lex = {1: 0.0, 2: 1.0, 3: 0.9}
    assert [p for p, _ in convex(dense, lex, 1.0)] == [1, 2, 3]
    assert [p for p, _ in convex(dense, lex, 0.0)] == [2, 3, 1]
    fused = dict(convex(dense, lex, 0.5))
    assert fused == pytest.approx({1: 0.5, 2: 0.75, 3: 0.45})


def test_convex_ties_break_by_id() -> None:
    assert [p for p, _ in convex({5: 1.0, 2: 1.0}, {5: 0.0, 2: 0.0}, 0.5)] == [2, 5]


def test_convex_needs_both_scores() -> None:
    with pytest.raises(ValueError):
        convex({1: 1.0}, {2: 1.0}, 0.5)
