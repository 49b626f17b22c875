import pytest

from searchapp.errors import ConfigError
from searchapp.query.fusion import (
    BM25_MIN,
    COSINE_MIN,
    Fusion,
    convex,
    minmax,
    normalise,
    ranks,
    rrf,
    theoretical_minmax,
    zscore,
)


def test_theoretical_minmax_uses_fixed_lower_bound_and_observed_max() -> None:
    out = theoretical_minmax({1: 0.5, 2: 0.0, 3: -1.0}, COSINE_MIN)
    assert out == pytest.approx({1: 1.0, 2: 2 / 3, 3: 0.0})
    out = theoretical_minmax({1: 8.0, 2: 2.0, 3: 0.0}, BM25_MIN)
    assert out == pytest.approx({1: 1.0, 2: 0.25, 3: 0.0})


def test_degenerate_side_carries_no_signal() -> None:
    assert theoretical_minmax({1: 0.0, 2: 0.0}, BM25_MIN) == {1: 0.0, 2: 0.0}
    assert minmax({1: 3.0, 2: 3.0}) == {1: 0.0, 2: 0.0}
    assert zscore({1: 3.0, 2: 3.0}) == {1: 0.0, 2: 0.0}
    assert theoretical_minmax({}, BM25_MIN) == {} and minmax({}) == {} and zscore({}) == {}


def test_minmax_and_zscore_over_candidates() -> None:
    assert minmax({1: 0.2, 2: 0.6, 3: 0.4}) == pytest.approx({1: 0.0, 2: 1.0, 3: 0.5})
    z = zscore({1: 1.0, 2: 2.0, 3: 3.0})
    assert z == pytest.approx({1: -1.224744871, 2: 0.0, 3: 1.224744871})


def test_normalise_dispatches_by_name() -> None:
    d, lx = normalise({1: 0.5, 2: 0.0}, {1: 0.0, 2: 4.0}, "theoretical")
    assert d == pytest.approx({1: 1.0, 2: 2 / 3}) and lx == pytest.approx({1: 0.0, 2: 1.0})
    d, lx = normalise({1: 0.5, 2: 0.0}, {1: 0.0, 2: 4.0}, "minmax")
    assert d == {1: 1.0, 2: 0.0}
    with pytest.raises(ConfigError):
        normalise({}, {}, "softmax")


def test_convex_weights_and_orders() -> None:
    dense = {1: 1.0, 2: 0.5, 3: 0.0}
    lex = {1: 0.0, 2: 1.0, 3: 0.9}
    assert [p for p, _ in convex(dense, lex, 1.0)] == [1, 2, 3]
    assert [p for p, _ in convex(dense, lex, 0.0)] == [2, 3, 1]
    assert dict(convex(dense, lex, 0.5)) == pytest.approx({1: 0.5, 2: 0.75, 3: 0.45})


def test_convex_ties_break_by_id_and_needs_both_scores() -> None:
    assert [p for p, _ in convex({5: 1.0, 2: 1.0}, {5: 0.0, 2: 0.0}, 0.5)] == [2, 5]
    with pytest.raises(ValueError):
        convex({1: 1.0}, {2: 1.0}, 0.5)


def test_rrf_uses_one_based_ranks_and_k() -> None:
    dense = {1: 0.9, 2: 0.8, 3: 0.1}
    lex = {1: 1.0, 2: 7.0, 3: 5.0}
    assert ranks(dense) == {1: 1, 2: 2, 3: 3} and ranks(lex) == {2: 1, 3: 2, 1: 3}
    fused = dict(rrf(dense, lex, rrf_k=60))
    assert fused[1] == pytest.approx(1 / 61 + 1 / 63)
    assert fused[2] == pytest.approx(1 / 62 + 1 / 61)
    assert [p for p, _ in rrf(dense, lex, 60)] == [2, 1, 3]
    weighted = dict(rrf(dense, lex, rrf_k=0, weights=(2.0, 0.0)))
    assert weighted == pytest.approx({1: 2.0, 2: 1.0, 3: 2 / 3})


def test_fusion_settings_are_validated() -> None:
    with pytest.raises(ConfigError, match="unknown fusion"):
        Fusion(method="sum")
    with pytest.raises(ConfigError, match="normalisation"):
        Fusion(norm="l2")
    with pytest.raises(ConfigError, match="alpha"):
        Fusion(alpha=-0.1)
