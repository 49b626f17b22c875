"""Query latency against index size: lexical, dense and hybrid, query embedding excluded.

    .venv/bin/python benchmarks/query.py --passages 100000 [--queries 100] [--json]

Fills an index with N synthetic passages (60 words from a Zipf-like vocabulary of 50,000 words, seeded) and
random unit vectors of dimension 384 written straight into the stores (no model time), then, in a fresh
process that opens the index as a user's would, times `Index.search` per mode over --queries queries of 4
mid-frequency words and reads its resident memory before and after the vectors load; then, lexical and hybrid,
two sets with the common words real questions keep (``QUERY_SETS``: mixed, one word of rank 10-99 and two of
rank 1,000-19,999; frequent, two of rank 3-29 and one of rank 1,000-19,999), and the lexical index's size
(``lexical_mb``: its data, `status`'s ``lexical_bytes``). The query vector is random
too and comes from a stub encoder, so the figures exclude query embedding (measured in docs/performance.md).
In the same run, as baselines: plain exact FAISS (IndexFlatIP, one thread) over the same vectors, and, up to
--bm25-max passages, rank_bm25's BM25Okapi over the same texts. Latency uses synthetic vectors;
approximate-search recall is measured on real embeddings by benchmarks/ann_recall.py. --index-dir keeps the
built index for later runs (building 1M passages takes minutes).

--index URL measures a PostgreSQL index of the same corpus in the same run (built there if the schema is empty;
the server's own process is not counted in the memory figures): keys prefixed postgresql_, with its build's
stages (load, BM25 build, vector index build) and the server's versions; --pg-vector-index ivf gives that index
HNSW at any size, flat an exact scan at any size (auto: exact below PostgreSQL's threshold, HNSW from it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from _common import call_ms, key_values, machine, print_json

from searchapp import Index, IndexConfig
from searchapp.store.rows import NewDocument
from searchapp.store.vector_policy import VECTOR_INDEXES, auto_nprobe
from searchapp.types import Document, Span

DIM = 384


def corpus(n: int, words: int, vocab: int, seed: int) -> list[str]:
    """``n`` passages of ``words`` words drawn from a Zipf-like distribution (p ~ 1/rank) over ``vocab`` words."""
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(1.0 / np.arange(1, vocab + 1))
    cdf /= cdf[-1]
    names = [f"w{i}" for i in range(vocab)]
    out: list[str] = []
    for start in range(0, n, 100_000):  # draws in blocks: one search of the CDF per word, not per passage
        rows = min(100_000, n - start)
        ranks = np.minimum(np.searchsorted(cdf, rng.random((rows, words))), vocab - 1)
        out += [" ".join([names[r] for r in row]) for row in ranks.tolist()]
    return out


# Query sets by name: each word drawn uniformly from a range of ranks of corpus()'s vocabulary, (words, first rank,
# end rank). The benchmark's own avoids every common word; a real question keeps one or two after the stop list.
QUERY_SETS: dict[str, list[tuple[int, int, int]]] = {
    "benchmark": [(4, 200, 5000)],
    "mixed": [(1, 10, 100), (2, 1000, 20000)],
    "frequent": [(2, 3, 30), (1, 1000, 20000)],
}


def queries(n: int, vocab: int, seed: int, kind: str = "benchmark") -> list[str]:
    """``n`` queries of the set ``kind`` (:data:`QUERY_SETS`; the benchmark's own: 4 words of mid frequency,
    ranks 200 to 5,000 of :func:`corpus`'s vocabulary)."""
    rng = np.random.default_rng(seed + 1 + list(QUERY_SETS).index(kind))
    out = []
    for _ in range(n):
        ranks = [int(r) for words, lo, hi in QUERY_SETS[kind] for r in rng.integers(lo, min(hi, vocab), size=words)]
        out.append(" ".join(f"w{i}" for i in ranks))
    return out


class StubEncoder:
    """Random unit query vectors, or the rows of ``fixed`` (float32 ``(q, d)``) in turn: query embedding is
    excluded from the latency figures."""

    dimension = DIM

    def __init__(self, seed: int, fixed: np.ndarray | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.fixed, self.next = fixed, 0

    def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray:
        if self.fixed is not None:
            rows = [(self.next + i) % len(self.fixed) for i in range(len(texts))]
            self.next += len(texts)
            return self.fixed[rows]
        v = self.rng.standard_normal((len(texts), DIM)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def real_like(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` passage vectors grown around SciFact's real ones as benchmarks/ann_recall.py grows them (float32
    ``(n, 384)``) and ``k`` of SciFact's real queries embedded by the same model (float32 ``(k, 384)``): graph
    search costs depend on the data (random vectors are its worst case), an exact scan's do not."""
    from _common import DATA
    from ann_recall import grow

    from searchapp import Encoder
    from searchapp.evaluate.beir import load_beir
    from searchapp.evaluate.runner import index_path

    path = index_path(DATA / "scifact", IndexConfig(precision="fp32"))
    if not path.exists():
        sys.exit(f"{path} missing: run searchapp eval ../shared/data/scifact --split train --precision fp32")
    with Index(path) as ix:
        _, vecs = ix.stores.vectors.vectors()
    queries = list(load_beir(DATA / "scifact", "train").queries.values())[:k]
    vecs = vecs.astype(np.float32)
    vecs = grow(vecs, n, 0.5, seed) if n > len(vecs) else vecs[np.random.default_rng(seed).permutation(len(vecs))[:n]]
    return vecs, Encoder(precision="fp32").encode(queries, truncate=True)


def fill(index: Index, n: int, seed: int, vecs: np.ndarray | None = None) -> dict[str, float]:
    """The synthetic corpus written straight into the stores: the folder's database (its vector file is built
    from it afterwards) or, for any other backend, through the stores' own writes; for PostgreSQL, the seconds
    of the load, the BM25 index build after it and the rest of the flush (the HNSW build above the threshold)."""
    if index.stores.backend != "folder":
        times = {}
        with index.writing():
            t = time.perf_counter()
            for batch in batches(n, seed, vecs):
                index.stores.write(remove=[], add=batch)
            times["load_s"] = time.perf_counter() - t
            t = time.perf_counter()
            index.stores.build_deferred_bm25()  # type: ignore[attr-defined]  # PostgreSQL stores only
            times["bm25_build_s"] = time.perf_counter() - t
            t = time.perf_counter()
            index.stores.flush()
            times["vector_index_build_s"] = time.perf_counter() - t
        return {k: round(v, 1) for k, v in times.items()}
    for batch in batches(n, seed, vecs):
        index.stores.write_rows(remove=[], add=batch)
    return {}


def batches(n: int, seed: int, vecs: np.ndarray | None = None) -> Iterator[list[NewDocument]]:
    """The synthetic passages, 5,000 a batch, each with a random unit vector or its row of ``vecs``."""
    rng = np.random.default_rng(seed)
    texts = corpus(n, 60, 50_000, seed)
    batch: list[NewDocument] = []
    for i, text in enumerate(texts):
        if vecs is None:
            v = rng.standard_normal((1, DIM)).astype(np.float32)
            v /= np.linalg.norm(v)
        else:
            v = vecs[i : i + 1]
        batch.append(NewDocument(Document(f"/synthetic/{i}", "", text, 0.0, len(text), "0" * 64),
                                 [Span(0, len(text), 60)], v))
        if len(batch) == 5000:
            yield batch
            batch = []
    yield batch


def rss_mb(field: str = "VmRSS") -> float:
    """Resident set size of this process, MiB: current (VmRSS) or peak (VmHWM). Not getrusage's ru_maxrss,
    which a child process inherits from its parent across fork and exec."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def latencies(fn: Callable[[Any], object], items: list[Any]) -> tuple[float, float]:
    """Median and 95th percentile milliseconds of ``fn`` over ``items``, after one warm-up call."""
    ms = call_ms(fn, items, warmup=1)
    return round(statistics.median(ms), 2), round(float(np.percentile(ms, 95)), 2)


def measure(path: Path | str, n_queries: int, seed: int, fixed: np.ndarray | None = None) -> dict[str, object]:
    """Run in a fresh process: what a user's query process holds and how fast it answers (``fixed``: the query
    vectors, else random ones)."""
    qs = queries(n_queries, 50_000, seed)
    out: dict[str, object] = {"rss_open_mb": 0.0}
    with Index(path, encoder=StubEncoder(seed, fixed)) as ix:
        ix.search(qs[0], k=10, mode="lexical")
        out["rss_open_mb"] = round(rss_mb(), 1)
        if ix.stores.backend != "folder":  # nothing held in the process: the database answers
            out["vector_index"] = ix.stats().vector_index
            for mode in ("lexical", "dense", "hybrid"):
                p50, p95 = latencies(lambda q, mode=mode: ix.search(q, k=10, mode=mode), qs)
                out[f"{mode}_p50_ms"], out[f"{mode}_p95_ms"] = p50, p95
            out["query_process_peak_rss_mb"] = round(rss_mb("VmHWM"), 1)
            return out
        store = ix.stores.vectors
        out["rss_vectors_loaded_mb"] = round(rss_mb(), 1)
        out["vector_index"] = store.kind
        if store.kind == "ivf":
            out["nlist"] = int(store.index.nlist)
            out["nprobe"] = store.nprobe or auto_nprobe(store.index.nlist)
        for mode in ("lexical", "dense", "hybrid"):
            p50, p95 = latencies(lambda q, mode=mode: ix.search(q, k=10, mode=mode), qs)
            out[f"{mode}_p50_ms"], out[f"{mode}_p95_ms"] = p50, p95
        # Ten documents, each by its passages (query/documents.py): what `--group-by document` costs on top.
        p50, p95 = latencies(lambda q: ix.search(q, k=10, mode="hybrid", group_by="document"), qs)
        out["hybrid_grouped_p50_ms"], out["hybrid_grouped_p95_ms"] = p50, p95
        out.update(other_sets(ix, n_queries, seed))
    out["query_process_peak_rss_mb"] = round(rss_mb("VmHWM"), 1)
    return out


def other_sets(ix: Index, n_queries: int, seed: int) -> dict[str, float]:
    """Lexical and hybrid p50 / p95 ms of the query sets with common words (``mixed_lexical_p50_ms``, ...)."""
    out = {}
    for kind in QUERY_SETS:
        if kind == "benchmark":
            continue
        qs = queries(n_queries, 50_000, seed, kind)
        for mode in ("lexical", "hybrid"):
            p50, p95 = latencies(lambda q, mode=mode: ix.search(q, k=10, mode=mode), qs)
            out[f"{kind}_{mode}_p50_ms"], out[f"{kind}_{mode}_p95_ms"] = p50, p95
    return out


def build(path: Path | str, n: int, seed: int, parts: dict[str, float] | None = None, vector_index: str = "auto",
          vecs: np.ndarray | None = None) -> float:
    """Fill and save an index of ``n`` synthetic passages (with ``vecs`` as their vectors, else random ones);
    seconds taken (``parts``: filled with the stages' seconds where the backend has them)."""
    t = time.perf_counter()
    config = IndexConfig(dimension=DIM, vector_index=vector_index)
    with Index(path, create=True, config=config, encoder=StubEncoder(seed)) as ix:
        stages = fill(ix, n, seed, vecs)
        if parts is not None:
            parts.update(stages)
        if ix.stores.backend != "folder":
            return time.perf_counter() - t
        with ix.writing():
            _ = ix.stores.vectors  # rebuilt from the database, straight into IVF above the threshold
            ix.stores.flush()
    return time.perf_counter() - t


def faiss_exact(path: Path, qs: list[str], seed: int) -> dict[str, object]:
    """Plain exact FAISS (IndexFlatIP, one thread: its fastest for single queries) over the same vectors."""
    import faiss

    with Index(path, encoder=StubEncoder(seed)) as ix:
        flat = faiss.IndexFlatIP(DIM)
        for _, vecs in ix.stores.stored_vectors(DIM):
            flat.add(vecs)
    qv = StubEncoder(seed + 7).encode(qs)
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        p50, p95 = latencies(lambda q: flat.search(q.reshape(1, -1), 10), list(qv))
    finally:
        faiss.omp_set_num_threads(threads)
    return {"faiss_exact_p50_ms": p50, "faiss_exact_p95_ms": p95}


def rank_bm25_baseline(n: int, qs: list[str], seed: int) -> dict[str, object]:
    """rank_bm25's BM25Okapi over the same passages: scores for every passage, then the top 100."""
    from rank_bm25 import BM25Okapi

    texts = corpus(n, 60, 50_000, seed)
    before = rss_mb()
    t = time.perf_counter()
    bm25 = BM25Okapi([text.split() for text in texts])
    build_s = time.perf_counter() - t
    del texts
    grown = rss_mb() - before
    p50, p95 = latencies(lambda q: np.argpartition(-bm25.get_scores(q.split()), 100)[:100], qs)
    return {"rank_bm25_build_s": round(build_s, 1), "rank_bm25_p50_ms": p50, "rank_bm25_p95_ms": p95,
            "rank_bm25_rss_mb": round(grown, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--index-dir", type=Path, help="build the index here, or reuse the one already there")
    ap.add_argument("--bm25-max", type=int, default=100_000, help="largest size to run rank_bm25 at")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--index", help="also a PostgreSQL index at this URL (built there if empty), measured in the same "
                    "run: postgresql+psycopg://USER@HOST/DB?schema=NAME")
    ap.add_argument("--pg-vector-index", default="auto", choices=VECTOR_INDEXES,
                    help="the PostgreSQL index's vector_index: ivf builds HNSW at any size, flat never")
    ap.add_argument("--vectors", default="random", choices=("random", "scifact"),
                    help="the passages' and queries' vectors: random unit ones, or grown around SciFact's real "
                    "passage vectors with SciFact's real queries (needs its fp32 eval cache); use another "
                    "--index-dir and schema for each")
    ap.add_argument("--lexical", default=None, choices=("fts5", "tantivy"),
                    help="the lexical engine of a folder index built here (an index keeps the one it was made with)")
    ap.add_argument("--measure", help=argparse.SUPPRESS)  # internal: the fresh query process
    ap.add_argument("--query-vectors", type=Path, help=argparse.SUPPRESS)  # internal: its query vectors (.npy)
    args = ap.parse_args()
    if args.measure:
        fixed = np.load(args.query_vectors) if args.query_vectors else None
        print(json.dumps(measure(args.measure, args.queries, args.seed, fixed)))
        return
    if args.lexical:
        from searchapp.store import lexical_index

        lexical_index.DEFAULT = args.lexical  # what an index made now records as its engine
    with tempfile.TemporaryDirectory() as scratch:
        run_all(args, Path(scratch))


def run_all(args: argparse.Namespace, scratch: Path) -> None:
    """Build what is missing, measure each index in a fresh process, print the record."""
    record = machine()
    vecs, extra = None, []
    if args.vectors == "scifact":
        vecs, qv = real_like(args.passages, args.queries, args.seed)
        np.save(scratch / "queries.npy", qv)
        extra = ["--query-vectors", str(scratch / "queries.npy")]

    def measured(location: str) -> dict[str, object]:
        run = subprocess.run([sys.executable, __file__, "--measure", location, "--queries", str(args.queries),
                              "--seed", str(args.seed), *extra], capture_output=True, text=True, check=True)
        return dict(json.loads(run.stdout))

    if args.index:
        from searchapp.store.locate import index_exists

        pg: dict[str, object] = {"build_s": None}
        if not index_exists(args.index):
            parts: dict[str, float] = {}
            pg["build_s"] = round(build(args.index, args.passages, args.seed, parts, args.pg_vector_index, vecs), 1)
            pg.update(parts)
        with Index(args.index, encoder=StubEncoder(args.seed)) as ix:
            stats = ix.stats()
            if stats.passages != args.passages:
                sys.exit(f"{args.index} holds another size: use another schema")
            pg["disk_mb"] = round(stats.disk_bytes / 2**20, 1)
            pg.update({k: v for k, v in stats.facts.items() if k.endswith("_version") or k == "vector_type"})
        pg.update(measured(args.index))
    qs = queries(args.queries, 50_000, args.seed)
    out: dict[str, object] = {
        "machine": record, "passages": args.passages,
        "queries": args.queries,
        "vectors": "synthetic (random unit, d=384)" if vecs is None
        else "grown around SciFact's real passage vectors (noise 0.5), SciFact's real queries",
        "raw_vectors_mb": round(args.passages * DIM * 4 / 2**20, 1),
    }
    path = args.index_dir or scratch / "ix"
    if (path / "index.db").exists():
        with Index(path, encoder=StubEncoder(args.seed)) as ix:
            if ix.stores.counts()[1] != args.passages:
                sys.exit(f"{path} holds another size: remove it or choose another --index-dir")
        out["build_s"] = None  # reused
    else:
        out["build_s"] = round(build(path, args.passages, args.seed, vecs=vecs), 1)
        out["build_peak_rss_mb"] = round(rss_mb("VmHWM"), 1)
    out["disk_mb"] = round(sum(f.stat().st_size for f in path.iterdir()) / 2**20, 1)
    with Index(path, encoder=StubEncoder(args.seed)) as ix:
        facts = ix.stats().facts
    out["lexical_engine"] = facts.get("lexical_engine")
    out["lexical_mb"] = round(int(facts.get("lexical_bytes") or 0) / 2**20, 1)  # type: ignore[call-overload]
    out.update(measured(str(path)))
    out["vectors_rss_mb"] = round(float(out["rss_vectors_loaded_mb"]) - float(out["rss_open_mb"]), 1)  # type: ignore[arg-type]
    out["vectors_rss_ratio"] = round(float(out["vectors_rss_mb"]) / float(out["raw_vectors_mb"]), 3)  # type: ignore[arg-type]
    out.update(faiss_exact(path, qs, args.seed))
    if args.index:
        out.update({f"postgresql_{k}": v for k, v in pg.items()})
    if args.passages <= args.bm25_max:
        out.update(rank_bm25_baseline(args.passages, qs, args.seed))
        out["lexical_speedup_vs_rank_bm25"] = round(
            float(out["rank_bm25_p50_ms"]) / float(out["lexical_p50_ms"]), 1  # type: ignore[arg-type]
        )
    if args.json:
        print_json(out)
        return
    print(key_values(out))


if __name__ == "__main__":
    main()
