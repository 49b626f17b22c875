"""What grouping by document adds to a hybrid query: ``Index.search(q, k=10, mode="hybrid")`` against the same with
``group_by="document"``, in one process, alternated, on an index benchmarks/query.py built.

    .venv/bin/python benchmarks/studies/grouped_overhead.py INDEX_DIR [--rounds 3] [--queries 100]

INDEX_DIR: a folder index kept by ``benchmarks/query.py --index-dir``; its queries (4 mid-frequency words) and random
query vectors (query embedding excluded). Each round times both forms over every query (after ten untimed of
each); the overhead of a round is the grouped p50 less the plain p50 of that round, a paired figure that the
machine's drift between processes does not move. Prints JSON: per round the two p50s (ms) and the overhead, and
the machine (``SEARCHAPP_BENCH_CHECKOUT`` times another checkout).

A study, kept for the figure it backs: docs/performance.md, "Grouped by document: documents read, not passages".
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import _path  # noqa: F401  (benchmarks/ on sys.path)
from _common import call_ms, machine, print_json
from query import StubEncoder, queries

from searchapp import Index


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()
    record = machine()  # before the timed work: its load average is the one the runs start under
    qs = queries(args.queries, 0, 0)
    rounds = []
    with Index(args.index, encoder=StubEncoder(0)) as ix:
        forms = {"plain": {}, "grouped": {"group_by": "document"}}
        for kw in forms.values():
            call_ms(lambda q, kw=kw: ix.search(q, k=10, mode="hybrid", **kw), qs[:10])
        for _ in range(args.rounds):
            p50 = {name: statistics.median(call_ms(lambda q, kw=kw: ix.search(q, k=10, mode="hybrid", **kw), qs))
                   for name, kw in forms.items()}
            rounds.append({**{f"{k}_p50_ms": round(v, 2) for k, v in p50.items()},
                           "overhead_ms": round(p50["grouped"] - p50["plain"], 2)})
    print_json({"index": str(args.index), "queries": len(qs), "rounds": rounds, "machine": record})


if __name__ == "__main__":
    main()
