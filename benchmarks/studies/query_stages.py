"""Where a hybrid query's time goes, stage by stage, on an index benchmarks/query.py built.

    .venv/bin/python benchmarks/studies/query_stages.py INDEX_DIR [--queries 100] [--seed 0]

INDEX_DIR: a folder index kept by ``benchmarks/query.py --index-dir``; the queries are that benchmark's (4
mid-frequency words) and the query vectors random, so query embedding is excluded. Each stage is timed alone over
every query, after one untimed call: the dense search (k0 = 100), FTS5 finding the matches (no scoring), FTS5
scoring them (``bm25()``, top 100), the hybrid's materialised matches (``store/lexical.Matches``), the stored
cosines of the lexical candidates (``VectorStore.scores``), the fusion, hydration of the ten hits and their
snippets; then the whole ``Index.search`` per mode. Prints JSON: p50 / p95 milliseconds per stage, the mean
number of matching passages and the machine.

A study, kept for the figure it backs: docs/performance.md, "Where a query's time goes: the stages, and what
changed".
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _path  # noqa: F401  (benchmarks/ on sys.path)
import numpy as np
from _common import call_ms, machine, print_json
from query import StubEncoder, queries

from searchapp import Index
from searchapp.analysis import query_terms
from searchapp.query.fusion import fuse
from searchapp.query.snippets import QueryTerms, snippet
from searchapp.store import lexical

K0, K = 100, 10


def timed(fn: Callable[[Any], object], items: list[Any]) -> list[float]:
    """p50 and p95 milliseconds of ``fn`` over ``items``, after one untimed call."""
    ms = call_ms(fn, items, warmup=1)
    return [round(statistics.median(ms), 2), round(float(np.percentile(ms, 95)), 2)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("index", type=Path)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    qs = queries(args.queries, 50_000, args.seed)
    vecs = dict(zip(qs, StubEncoder(args.seed + 1).encode(qs), strict=True))
    out: dict[str, object] = {"machine": machine(), "index": str(args.index), "queries": len(qs)}
    ms: dict[str, list[float]] = {}
    with Index(args.index, encoder=StubEncoder(args.seed)) as ix:
        store = ix.stores.vectors
        fusion = ix.config.fusion
        with ix.stores.reader(None, dense=True) as reader:
            raw = reader.conn.connection.driver_connection  # type: ignore[attr-defined]
            exprs = {q: lexical.match_expression(query_terms(q)) for q in qs}
            count = "SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?"
            out["mean_matching_passages"] = round(statistics.mean(raw.execute(count, (exprs[q],)).fetchone()[0]
                                                                  for q in qs), 1)
            ms["dense (FAISS, k0)"] = timed(lambda q: store.search(vecs[q], K0, None), qs)
            ms["lexical: matching only"] = timed(lambda q: raw.execute(count, (exprs[q],)).fetchall(), qs)
            ms["lexical: scored, top k0"] = timed(lambda q: reader.lexical(q, K0), qs)

            def materialised(q: str) -> None:
                with lexical.Matches(reader.conn, q, K0) as matches:
                    matches.scores([1])

            ms["lexical: materialised (hybrid)"] = timed(materialised, qs)
            cands = {q: reader.gather(q, vecs[q], K0) for q in qs}
            lexical_ids = {q: list(cands[q].lexical) for q in qs}
            ms["cosines of the lexical candidates"] = timed(lambda q: store.scores(vecs[q], lexical_ids[q]), qs)
            ms["fusion"] = timed(lambda q: fuse(cands[q], fusion), qs)
            pages = {q: [pid for pid, _ in fuse(cands[q], fusion)[:K]] for q in qs}
            ms["hydration"] = timed(lambda q: reader.hydrate(pages[q]), qs)
            records = {q: list(reader.hydrate(pages[q]).values()) for q in qs}

            def snippets(q: str) -> None:
                terms = QueryTerms(q)
                recs = records[q]
                for rec, found in zip(recs, terms.find_many([r.text for r in recs]), strict=True):
                    snippet(terms, rec.text, rec.start, found=found)

            ms["snippets"] = timed(snippets, qs)
        for mode in ("lexical", "dense", "hybrid"):
            ms[f"Index.search {mode}"] = timed(lambda q, mode=mode: ix.search(q, k=K, mode=mode), qs)
    out["ms_p50_p95"] = ms
    print_json(out)


if __name__ == "__main__":
    main()
