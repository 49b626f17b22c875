"""Lexical and hybrid queries with one lexical part against one per core, beside an IVF vector index.

    .venv/bin/python benchmarks/studies/hybrid_parts.py INDEX_DIR [--rounds 3] [--nprobe 64] [--queries 100]

INDEX_DIR: a folder index kept by ``benchmarks/query.py --index-dir`` (1M passages: IVF); the queries are that
benchmark's, the query vectors random (query embedding excluded). In one warm process, each round runs the same
queries through ``Index.search`` in lexical and hybrid mode with the cores the reader sees set to 1 and then 2
(beside an IVF index a hybrid session takes a part per core: one lexical part, then two), so the four run
alternately under the same load. Prints JSON after each round: p50 / p95 wall milliseconds and the process's CPU
milliseconds per query.

A study, kept for the figure it backs: docs/performance.md, "Query path on an AVX2 CPU".
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import _path  # noqa: F401  (benchmarks/ on sys.path)
import numpy as np
from query import StubEncoder, queries

from searchapp import Index
from searchapp.store import folder


def timed(fn: Callable[[str], object], qs: list[str]) -> list[float]:
    """p50 and p95 wall milliseconds of ``fn`` over ``qs`` after one untimed call, and CPU ms per query."""
    fn(qs[0])
    ms = []
    cpu = time.process_time()
    for q in qs:
        t = time.perf_counter()
        fn(q)
        ms.append((time.perf_counter() - t) * 1000)
    per_query_cpu = (time.process_time() - cpu) * 1000 / len(qs)
    return [round(statistics.median(ms), 1), round(float(np.percentile(ms, 95)), 1), round(per_query_cpu, 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("index", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nprobe", type=int, default=64)
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()
    qs = queries(args.queries, 50_000, 0)
    out: dict[str, list[list[float]]] = {}
    with Index(args.index, encoder=StubEncoder(0)) as ix:
        ix.stores.vectors.nprobe = args.nprobe
        for _ in range(args.rounds):
            for mode, cores in (("lexical", 1), ("lexical", 2), ("hybrid", 1), ("hybrid", 2)):
                folder._cores = lambda c=cores: c  # type: ignore[assignment]  # what the reader splits by
                out.setdefault(f"{mode} cores {cores}", []).append(
                    timed(lambda q, mode=mode: ix.search(q, k=10, mode=mode), qs))
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
