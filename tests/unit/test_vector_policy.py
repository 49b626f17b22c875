"""The vector index's rule (store/vector_policy.py): each backend's own threshold where the settings name none."""

from __future__ import annotations

import pytest

from searchapp.store.vector_policy import DEFAULT_THRESHOLDS, VectorPolicy


def test_each_backend_fills_in_its_own_threshold() -> None:
    # The measured defaults (docs/postgres.md "Exact scan against HNSW by size"; docs/performance.md).
    assert DEFAULT_THRESHOLDS == {"folder": 200_000, "postgresql": 25_000}
    for backend, threshold in DEFAULT_THRESHOLDS.items():
        policy = VectorPolicy().for_backend(backend)
        assert policy.threshold == threshold
        assert not policy.approximate(threshold - 1) and policy.approximate(threshold)


def test_a_threshold_given_wins_over_the_backends() -> None:
    for backend in DEFAULT_THRESHOLDS:
        assert VectorPolicy(ivf_threshold=1234).for_backend(backend).threshold == 1234


def test_an_unresolved_policy_is_never_used_as_if_it_had_a_threshold() -> None:
    with pytest.raises(ValueError, match="not resolved"):
        VectorPolicy().approximate(10)
    assert VectorPolicy(kind="ivf").for_backend("folder").approximate(1)
