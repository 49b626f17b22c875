"""How far pg_textsearch's BM25 scores drift after deletes, and what rebuilding the index costs.

    .venv/bin/python benchmarks/studies/pg_bm25_drift.py --index URL [--passages 20000] [--delete 0.1] [--json]

Builds an index of N synthetic passages (benchmarks/studies/lexical.py's corpus, random vectors) in the PostgreSQL
schema the URL names (it must not hold an index yet), deletes a fraction of the documents in one write *without*
the rebuild the store does when a writer finishes, scores --queries queries, then rebuilds the BM25 index
(PostgresStores.compact, what the store runs after deletes) and scores them again: the relative score error of
the stale statistics, the share of queries whose top 10 changed, and the rebuild's time, against the time of
the delete itself.

A study, kept for the figure it backs: docs/postgres.md, "Sizing" ("BM25 statistics after deletes").
"""

from __future__ import annotations

import argparse
import statistics
import time

import _path  # noqa: F401  (benchmarks/ on sys.path)
from _common import key_values, machine, print_json
from query import DIM, StubEncoder, batches, queries

from searchapp import Index, IndexConfig


def scores(ix: Index, qs: list[str]) -> list[list[tuple[int, float]]]:
    return [[(h.passage_id, h.score) for h in ix.search(q, k=10, mode="lexical")] for q in qs]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", required=True, help="postgresql+psycopg://USER@HOST/DB?schema=NAME (a new schema)")
    ap.add_argument("--passages", type=int, default=20_000)
    ap.add_argument("--delete", type=float, default=0.1, help="fraction of the documents deleted")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    qs = queries(args.queries, 50_000, args.seed)
    out: dict[str, object] = {"machine": machine(),
                              "passages": args.passages, "deleted_fraction": args.delete, "queries": args.queries}
    with Index(args.index, create=True, config=IndexConfig(dimension=DIM), encoder=StubEncoder(args.seed)) as ix:
        stores = ix.stores
        with ix.writing():
            t = time.perf_counter()
            for batch in batches(args.passages, args.seed):
                stores.write(remove=[], add=batch)
            out["load_s"] = round(time.perf_counter() - t, 1)
            ids = sorted(stores.documents().values(), key=lambda d: d.id)
            gone = [d.id for d in ids[:: max(1, round(1 / args.delete))]]
            t = time.perf_counter()
            stores.write(remove=gone, add=[])  # counted as stale, not yet rebuilt (no flush)
            out["delete_s"] = round(time.perf_counter() - t, 2)
            out["deleted_documents"] = len(gone)
            stale = scores(ix, qs)
            t = time.perf_counter()
            stores.compact()
            out["reindex_s"] = round(time.perf_counter() - t, 2)
            exact = scores(ix, qs)  # read sessions after the rebuild take connections opened after it
    errors = []
    for s, e in zip(stale, exact, strict=True):
        before, after = dict(s), dict(e)
        errors += [abs(before[p] - after[p]) / after[p] for p in before.keys() & after.keys() if after[p] > 0]
    out["relative_score_error_median"] = round(statistics.median(errors), 4) if errors else 0.0
    out["relative_score_error_max"] = round(max(errors), 4) if errors else 0.0
    out["queries_with_another_top10_order"] = sum(
        [p for p, _ in s] != [p for p, _ in e] for s, e in zip(stale, exact, strict=True)
    )
    if args.json:
        print_json(out)
        return
    print(key_values(out))


if __name__ == "__main__":
    main()
