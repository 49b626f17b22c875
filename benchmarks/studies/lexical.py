"""Lexical engines on synthetic passages: our FTS5 store against rank_bm25, in one process.

    .venv/bin/python benchmarks/studies/lexical.py --passages 100000 --queries 50 [--json]

Passages are 60 words drawn from a Zipf-like vocabulary of 50,000 words (seeded); queries are 4 words of
mid frequency. Prints build time, per-query latency (median, p95) of the FTS5 index as searchapp uses it
(`store.lexical.search`, OR of terms, top 100) and of rank_bm25's BM25Okapi (`get_scores` + top 100), the
ratio, the FTS5 index's size on disk, and an incremental add/remove of 1,000 passages in FTS5 (rank_bm25 can
only rebuild).

A study, kept for the figure it backs: docs/performance.md, "Lexical index: FTS5 against rank_bm25".
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import _path  # noqa: F401  (benchmarks/ on sys.path)
import numpy as np
from _common import call_ms, key_values, machine, print_json
from query import corpus, queries

from searchapp.store import lexical
from searchapp.store.rows import NewDocument
from searchapp.store.sqlite import SqliteRecords
from searchapp.types import Document, Span


def timed(fn: Callable[[str], object], items: list[str]) -> tuple[float, float]:
    """Median and 95th percentile milliseconds of ``fn`` over ``items``, unrounded."""
    ms = call_ms(fn, items)
    return statistics.median(ms), float(np.percentile(ms, 95))


def build_fts(path: Path, texts: list[str]) -> SqliteRecords:
    meta = SqliteRecords(path)
    zero = np.zeros((1, 1), np.float32)
    batch = []
    for i, t in enumerate(texts):
        doc = Document(f"/bench/{i}", "", t, 0.0, len(t), "0" * 64)
        batch.append(NewDocument(doc, [Span(0, len(t), 0)], zero))
        if len(batch) == 5000:
            meta.write(remove=[], add=batch)
            batch = []
    meta.write(remove=[], add=batch)
    return meta


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-rank-bm25", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    texts = corpus(args.passages, 60, 50_000, args.seed)
    qs = queries(args.queries, 50_000, args.seed)
    res: dict[str, object] = {
        "machine": machine(),
        "passages": args.passages,
        "queries": args.queries,
    }
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        meta = build_fts(Path(tmp) / "index.db", texts)
        res["fts5_build_s"] = round(time.perf_counter() - t, 2)
        with meta.connect() as conn:
            res["fts5_query_ms_median"], res["fts5_query_ms_p95"] = timed(
                lambda q: lexical.search(conn, q, 100), qs
            )
        extra = texts[:1000]
        t = time.perf_counter()
        meta.write(remove=[], add=[
            NewDocument(Document(f"/extra/{i}", "", x, 0.0, 1, "0" * 64), [Span(0, len(x), 0)],
                        np.zeros((1, 1), np.float32))
            for i, x in enumerate(extra)
        ])
        ids = [d.id for p, d in meta.documents().items() if p.startswith("/extra/")]
        meta.write(remove=ids, add=[])
        res["fts5_add_remove_1000_s"] = round(time.perf_counter() - t, 3)
        res["fts5_db_mb"] = round(sum(f.stat().st_size for f in Path(tmp).iterdir()) / 2**20, 1)
        meta.close()
    if not args.skip_rank_bm25:
        from rank_bm25 import BM25Okapi

        t = time.perf_counter()
        bm = BM25Okapi([x.split() for x in texts], k1=1.2, b=0.75)
        res["rank_bm25_build_s"] = round(time.perf_counter() - t, 2)
        res["rank_bm25_query_ms_median"], res["rank_bm25_query_ms_p95"] = timed(
            lambda q: np.argsort(-bm.get_scores(q.split()))[:100], qs
        )
        res["rank_bm25_over_fts5_median"] = round(
            float(res["rank_bm25_query_ms_median"]) / float(res["fts5_query_ms_median"]), 1  # type: ignore[arg-type]
        )
    if args.json:
        print_json(res)
    else:
        print(key_values(res, digits=2))


if __name__ == "__main__":
    main()
