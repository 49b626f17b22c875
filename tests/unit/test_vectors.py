"""The approximate (IVF) vector index against exact search, on a small clustered set."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from searchapp.store.vector_policy import auto_nlist, auto_nprobe
from searchapp.store.vectors import VectorStore


def clustered(n: int, d: int, centres: int, seed: int) -> np.ndarray:
    """Unit vectors around random centres, like embeddings of a corpus with topics (uniform random vectors
    have no neighbourhoods for an IVF index to find and understate its recall)."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centres, d)).astype(np.float32)
    x = c[rng.integers(0, centres, n)] + 0.6 * rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_ivf_finds_the_exact_top_10_within_the_stated_recall(tmp_path: Path) -> None:
    d, n = 32, 6000
    vecs = clustered(n + 200, d, 60, seed=0)
    data, queries = vecs[:n], vecs[n:]
    ids = np.arange(1000, 1000 + n, dtype=np.int64)  # passage ids need not start at 0
    exact = VectorStore(tmp_path / "exact.faiss", d)
    exact.add(ids, data)
    approx = VectorStore(tmp_path / "ivf.faiss", d)
    approx.add(ids, data)
    approx.to_ivf(auto_nlist(n))
    assert approx.kind == "ivf" and auto_nprobe(approx.index.nlist) < approx.index.nlist
    recalls = []
    for q in queries:
        truth = {i for i, _ in exact.search(q, 10)}
        found = approx.search(q, 10)
        recalls.append(len(truth & {i for i, _ in found}) / 10)
        # an id the IVF index returns carries its exact cosine
        i, score = found[0]
        assert score == np.float32(data[i - 1000] @ q) or abs(score - float(data[i - 1000] @ q)) < 1e-5
    assert np.mean(recalls) >= 0.95


def test_switching_kinds_keeps_every_vector_searchable(tmp_path: Path) -> None:
    d, n = 16, 800
    data = clustered(n, d, 10, seed=1)
    ids = np.arange(n, dtype=np.int64) * 3
    store = VectorStore(tmp_path / "v.faiss", d, nprobe=10_000)  # every list probed: exact answers
    store.add(ids, data)
    before = [store.search(v, 1)[0][0] for v in data[:50]]
    store.to_ivf(auto_nlist(n))
    assert store.kind == "ivf" and [store.search(v, 1)[0][0] for v in data[:50]] == before
    store.remove(ids[:10])
    store.to_flat()
    assert store.kind == "flat" and store.count == n - 10
    assert sorted(store.ids().tolist()) == sorted(ids[10:].tolist())
    assert [store.search(v, 1)[0][0] for v in data[10:50]] == before[10:]


def test_scores_are_each_held_vectors_cosine_and_leave_out_ids_not_held(tmp_path: Path) -> None:
    d, n = 16, 600
    data = clustered(n, d, 8, seed=2)
    ids = np.arange(n, dtype=np.int64) * 2 + 5
    store = VectorStore(tmp_path / "v.faiss", d)
    store.add(ids, data)
    q = data[7]
    for kind in ("flat", "ivf"):
        if kind == "ivf":
            store.to_ivf(auto_nlist(n))
        assert store.kind == kind
        asked = [int(ids[3]), int(ids[500]), int(ids[3])]
        got = store.scores(q, asked)
        assert list(got) == [int(ids[3]), int(ids[500])]
        for pid, score in got.items():
            assert abs(score - float(data[(pid - 5) // 2] @ q)) < 1e-5
        # an id not held (6 is between the held ones) is left out, the others still scored
        assert store.scores(q, [6, int(ids[0])]) == {int(ids[0]): store.scores(q, [int(ids[0])])[int(ids[0])]}
        assert store.scores(q, []) == {}
