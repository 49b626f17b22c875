"""Where a lexical query's time goes on a small index: the FTS5 statement, hydration, finding the query's words in
the hits, their snippet windows, and the whole ``Index.search``.

    .venv/bin/python benchmarks/studies/lexical_hits.py DATASET_DIR [--split train] [--max-docs 400]
        [--max-queries 100] [--rounds 3]

The index is ``benchmarks/peers.py``'s for the same subset (``--max-docs`` documents of the BEIR folder, the
judged queries of the first ``--max-queries``), built the same way (fp32, searchapp's ingest of each document's
title and text). ``Index.search(q, k=10, mode="lexical")`` is timed first over every query once in this fresh
process (``cold``: each hit's words meet the stem cache for the first time, as in peers.py, which runs each query
once), then ``--rounds`` more times (``warm``) with each stage timed alone before it. Prints JSON: p50 / p95
milliseconds, cold and warm, per stage, and the machine (``SEARCHAPP_BENCH_CHECKOUT`` times another checkout).

A study, kept for the figure it backs: docs/performance.md, "A hit's highlights: finding the query's words".
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import _path  # noqa: F401  (benchmarks/ on sys.path)
from _common import call_ms, machine, print_json
from peers import child_env, subset

from searchapp import Index
from searchapp.evaluate.beir import load_beir
from searchapp.query.snippets import QueryTerms, snippet

K = 10


def p50_p95(ms: list[float]) -> list[float]:
    qs = statistics.quantiles(ms, n=20, method="inclusive")
    return [round(statistics.median(ms), 3), round(qs[18], 3)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--split", default="train")
    ap.add_argument("--max-docs", type=int, default=400)
    ap.add_argument("--max-queries", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--build", type=Path, help=argparse.SUPPRESS)  # the child: build the index in this folder
    args = ap.parse_args()
    if args.build is not None:
        data = load_beir(args.dataset, args.split)
        with Index.open_or_create(args.build / "index", precision="fp32", threads=2) as ix:
            ix.ingest_records((d, title, data.document_text(d)) for d, (title, _) in data.corpus.items())
        return
    record = machine()  # before the timed work: its load average is the one the runs start under
    with tempfile.TemporaryDirectory() as tmp:
        folder = subset(args.dataset, args.split, args.max_docs, args.max_queries, Path(tmp) / "data")
        data = load_beir(folder, args.split)
        queries = [data.queries[q] for q in data.qrels]
        # Built by a child, as peers.py builds it: the queries run in a process that has done nothing else.
        subprocess.run([sys.executable, __file__, str(folder), "--split", args.split, "--build", tmp], check=True,
                       env=child_env(2))
        with Index(Path(tmp) / "index") as ix:
            def search(q: str) -> object:
                return ix.search(q, k=K, mode="lexical")

            cold = call_ms(search, queries)
            # What each stage is given: the query's hits (ids, then records) and their texts, gathered once.
            with ix.stores.reader(None, dense=False) as reader:
                runs = {q: reader.lexical(q, K) for q in queries}
                records = {q: reader.hydrate([pid for pid, _ in runs[q]]) for q in queries}
            texts = {q: [records[q][pid].text for pid, _ in runs[q]] for q in queries}
            found = {q: QueryTerms(q).find_many(texts[q]) for q in queries}

            def fts5(q: str) -> object:
                with ix.stores.reader(None, dense=False) as reader:
                    return reader.lexical(q, K)

            def hydrate(q: str) -> object:
                with ix.stores.reader(None, dense=False) as reader:
                    return reader.hydrate([pid for pid, _ in runs[q]])

            def words(q: str) -> object:
                return QueryTerms(q).find_many(texts[q])

            def windows(q: str) -> object:
                terms = QueryTerms(q)
                return [snippet(terms, text, 0, found=f) for text, f in zip(texts[q], found[q], strict=True)]

            stages = {"fts5 (session and statement)": fts5, "hydration": hydrate, "query words in the hits": words,
                      "snippet windows": windows, "Index.search": search}
            warm: dict[str, list[float]] = {name: [] for name in stages}
            for _ in range(args.rounds):
                for name, fn in stages.items():
                    warm[name] += call_ms(fn, queries, warmup=1)
    print_json({
        "dataset": args.dataset.name, "split": args.split, "documents": len(data.corpus), "queries": len(queries),
        "rounds": args.rounds, "cold_search_p50_p95_ms": p50_p95(cold),
        "warm_p50_p95_ms": {name: p50_p95(ms) for name, ms in warm.items()}, "machine": record,
    })


if __name__ == "__main__":
    main()
