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


def test_queries_probe_the_lists_whose_recall_was_measured() -> None:
    from searchapp.store.vector_policy import PROBE_SHARE, PROBES, auto_nlist, auto_nprobe

    # docs/performance.md, "Vector index": recall@10 0.977 with 64 of 913 lists (52k real vectors) and 0.982 with
    # 64 of 4,000 (1M grown around them); 7% of the lists (280 at 1M) cost four times the search for 0.998.
    assert auto_nprobe(auto_nlist(1_000_000)) == PROBES == 64
    assert auto_nprobe(913) == PROBES
    for nlist in (16, 50, 913, 4000, 4001, 8000, 65536):
        probes = auto_nprobe(nlist)
        assert probes == min(nlist, max(PROBES, round(nlist * PROBE_SHARE)))
        assert probes / nlist >= min(1.0, PROBE_SHARE) - 1 / nlist  # never a smaller share than measured at 1M
