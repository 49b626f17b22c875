"""Recall@10 of the IVF vector index against exact search, on real embeddings.

    .venv/bin/python benchmarks/ann_recall.py [--scale N] [--sets scifact:train,wikiqa:dev,...] [--json]

Vectors: every passage of the cached fp32 eval indexes of the visible sets, or of those --sets names (build them
first with `searchapp eval ../shared/data/SET --split S --precision fp32`; about 47,000 real all-MiniLM-L6-v2
passage vectors for the visible sets). Queries: the sets' real queries, encoded with the same model. IVF with nlist
= 4 sqrt(n) lists, trained on the vectors themselves, as the index does above its threshold; recall@10 = share of
the exact top 10 found in the IVF top 10, and the mean query time of each, for several nprobe (and the index's own
choice, `auto_nprobe`).

--scale N grows the set to N vectors drawn around the real ones (each a real vector plus Gaussian noise of norm
about --noise, renormalised: cosine about 0.9 to its source at the default 0.5), to measure recall at sizes the
visible sets do not reach; the JSON says so. The real queries stay the queries.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import faiss
import numpy as np
from _common import DATA, SETS, SETS_OPTION, parse_sets, print_json

from searchapp import Encoder, Index, IndexConfig
from searchapp.evaluate.beir import load_beir
from searchapp.evaluate.runner import index_path
from searchapp.store.vector_policy import auto_nlist, auto_nprobe
from searchapp.store.vectors import VectorStore


def grow(vecs: np.ndarray, n: int, noise: float, seed: int = 0) -> np.ndarray:
    """``vecs`` float32 ``(m, d)`` and ``n - m`` more, each a random row of ``vecs`` plus Gaussian noise of norm
    about ``noise``, renormalised: float32 ``(n, d)``."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, vecs.shape[1]), dtype=np.float32)
    out[: len(vecs)] = vecs
    for start in range(len(vecs), n, 100_000):
        stop = min(start + 100_000, n)
        rows = vecs[rng.integers(0, len(vecs), stop - start)]
        rows = rows + rng.standard_normal(rows.shape).astype(np.float32) * (noise / np.sqrt(vecs.shape[1]))
        out[start:stop] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return out


def real_vectors(
    sets: Sequence[tuple[str, str]] = tuple(SETS.items()),
) -> tuple[list[np.ndarray], list[np.ndarray], list[str]]:
    """Every passage vector of the cached fp32 eval indexes of ``sets`` (``(name, split)``; the visible ones by
    default), with ids shifted apart (int64 ``(m_i,)`` and float32 ``(m_i, d)`` per set), and all the sets'
    queries; exits naming the missing cache."""
    config = IndexConfig(precision="fp32")
    ids_all, vecs_all, queries = [], [], []
    offset = 0
    for name, split in sets:
        path = index_path(DATA / name, config)
        if not path.exists():
            sys.exit(f"{path} missing: run searchapp eval ../shared/data/{name} --split {split} --precision fp32")
        with Index(path) as ix:
            ids, vecs = ix.stores.vectors.vectors()
        ids_all.append(ids + offset)  # ids are per index: shift them apart
        offset += int(ids.max()) + 1
        vecs_all.append(vecs)
        queries += list(load_beir(DATA / name, split).queries.values())
    return ids_all, vecs_all, queries


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=0, help="grow to N vectors drawn around the real ones")
    ap.add_argument("--noise", type=float, default=0.5)
    ap.add_argument("--sets", default=SETS_OPTION, help="NAME:SPLIT,... whose cached fp32 eval indexes give the "
                    "vectors (default: the visible sets)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ids_all, vecs_all, queries = real_vectors(parse_sets(args.sets))
    ids = np.concatenate(ids_all)
    vecs = np.vstack(vecs_all).astype(np.float32)
    source = "real passage embeddings of the visible sets (fp32)"
    if args.scale > len(ids):
        vecs = grow(vecs, args.scale, args.noise)
        ids = np.arange(len(vecs), dtype=np.int64)
        real = sum(len(v) for v in vecs_all)
        source = f"{real} real passage embeddings, then vectors drawn around them (noise {args.noise}) to {args.scale}"
    qv = Encoder(precision="fp32").encode(queries, truncate=True)
    with tempfile.TemporaryDirectory() as tmp:
        exact = VectorStore(Path(tmp) / "exact.faiss", vecs.shape[1])
        exact.add(ids, vecs)
        t = time.perf_counter()
        truth = [[i for i, _ in exact.search(q, 10)] for q in qv]
        exact_ms = (time.perf_counter() - t) * 1000 / len(qv)
        approx = VectorStore(Path(tmp) / "ivf.faiss", vecs.shape[1])
        approx.add(ids, vecs)
        nlist = auto_nlist(len(ids))
        t = time.perf_counter()
        approx.to_ivf(nlist)
        build_s = time.perf_counter() - t
        rows = []
        for nprobe in sorted({4, 8, 16, 32, 64, 128, auto_nprobe(nlist)}):
            approx.nprobe = nprobe
            t = time.perf_counter()
            found = [[i for i, _ in approx.search(q, 10)] for q in qv]
            ms = (time.perf_counter() - t) * 1000 / len(qv)
            recall = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found, truth, strict=True)]))
            rows.append({"nprobe": nprobe, "recall@10": round(recall, 4), "ms_per_query": round(ms, 3),
                         "default": nprobe == auto_nprobe(nlist)})
    out = {"vectors": len(ids), "queries": len(qv), "nlist": nlist, "ivf_build_s": round(build_s, 2),
           "exact_ms_per_query": round(exact_ms, 3), "threads": faiss.omp_get_max_threads(), "rows": rows,
           "vectors_source": source}
    if args.json:
        print_json(out)
        return
    print(f"{out['vectors']} real vectors, {out['queries']} real queries, nlist {nlist}, "
          f"build {out['ivf_build_s']} s, exact {out['exact_ms_per_query']} ms/query")
    for r in rows:
        mark = "  (the index's default)" if r["default"] else ""
        print(f"nprobe {r['nprobe']:>4}: recall@10 {r['recall@10']:.4f}, {r['ms_per_query']:.3f} ms/query{mark}")


if __name__ == "__main__":
    main()
