"""Where a lexical search's time goes, on a real index and real queries.

    .venv/bin/python benchmarks/studies/lexical_breakdown.py INDEX_DIR QUERIES_JSONL [--queries 300] [--json]

INDEX_DIR: a folder index (``searchapp eval`` caches one per collection under ``<cache>/eval/``); QUERIES_JSONL:
the collection's BEIR queries file (``{"_id", "text"}`` a line). For each query, in this order, each step timed
alone over every query before the next (so caches warm alike):

- ``match``: FTS5 finding the passages that match any query term (``count(*)`` of the MATCH, no scoring);
- ``scored top 10``: the statement searchapp runs (``store.lexical.search``: ``bm25()`` of every match, top 10);
- ``Index.search``: the product's whole lexical search (the above, hydration of the hits, snippets).

Prints the median and p95 of each in milliseconds and the mean number of matching passages and of query terms.

A study, kept for the figure it backs: docs/performance.md, "Where a query's time goes: the stages, and what
changed" and "Against txtai and LangChain".
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path

import _path  # noqa: F401  (benchmarks/ on sys.path)
from _common import call_ms, print_json

from searchapp import Index
from searchapp.analysis import query_terms
from searchapp.sqlite_driver import dbapi
from searchapp.store.lexical import match_expression


def timed(fn: Callable[[str], object], queries: list[str]) -> dict[str, float]:
    """Median and p95 milliseconds of ``fn`` over ``queries`` (each run once, after the first 10 once untimed)."""
    ts = sorted(call_ms(fn, queries, warmup=10))
    return {"p50": round(statistics.median(ts), 3), "p95": round(ts[min(len(ts) - 1, int(0.95 * len(ts)))], 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("index", type=Path)
    ap.add_argument("queries_file", type=Path)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with args.queries_file.open(encoding="utf-8") as fh:
        texts = [json.loads(line)["text"] for line in fh if line.strip()][: args.queries]
    conn = dbapi().connect(f"file:{args.index / 'index.db'}?mode=ro", uri=True)
    exprs = {q: match_expression(query_terms(q)) for q in texts}
    texts = [q for q in texts if query_terms(q)]
    matches = [conn.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?", (exprs[q],)).fetchone()[0]
               for q in texts]
    scored = ("SELECT rowid, -bm25(passages_fts) AS s FROM passages_fts WHERE passages_fts MATCH ? "
              "ORDER BY bm25(passages_fts), rowid LIMIT 10")
    index = Index(args.index, read_only=True)
    result = {
        "index": str(args.index), "queries": len(texts),
        "passages": conn.execute("SELECT count(*) FROM passages_fts").fetchone()[0],
        "mean_terms": round(statistics.mean(len(query_terms(q)) for q in texts), 2),
        "mean_matching_passages": round(statistics.mean(matches), 1),
        "ms": {
            "match": timed(lambda q: conn.execute(
                "SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?", (exprs[q],)).fetchall(), texts),
            "scored top 10": timed(lambda q: conn.execute(scored, (exprs[q],)).fetchall(), texts),
            "Index.search": timed(lambda q: index.search(q, k=10, mode="lexical"), texts),
        },
    }
    index.close()
    if args.json:
        print_json(result)
        return
    print(f"{result['index']}: {result['passages']} passages; {result['queries']} queries of "
          f"{result['mean_terms']} terms matching {result['mean_matching_passages']} passages on average")
    for step, ms in result["ms"].items():
        print(f"  {step:>14}: p50 {ms['p50']:.2f} ms, p95 {ms['p95']:.2f} ms")


if __name__ == "__main__":
    main()
