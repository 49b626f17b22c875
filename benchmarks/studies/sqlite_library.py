"""FTS5's scoring through each SQLite library and page-cache size, on a benchmarks/query.py index.

    .venv/bin/python benchmarks/studies/sqlite_library.py INDEX_DIR [--rounds 3] [--queries 100] [--only NAME ...]

Times the lexical side's statement alone (``bm25()`` of every match of the benchmark's queries, top 100, one
part) in a fresh process per configuration, the configurations alternated in each round: the standard
library's ``sqlite3`` (the distribution's SQLite) and pysqlite3's, each with SQLite's default cache, and
pysqlite3's with larger caches or a memory map. Each process runs every query once untimed, then twice timed;
the figure is milliseconds a query over the two timed passes. One library per process: two copies of SQLite on
one file in one process break each other's locks. ``--only stdlib:default`` runs one configuration once, for a
profiler (``perf record -g``).

Prints JSON: per configuration, each round's figure and their median, and the machine.
A study, kept for the figure it backs: docs/performance.md, "The SQLite library, and the page cache".
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import _path  # noqa: F401  (benchmarks/ on sys.path)
from _common import machine, print_json
from query import queries

from searchapp.analysis import query_terms
from searchapp.store import lexical

# name: (library, pragmas)
CONFIGS = {
    "stdlib:default": ("stdlib", []),
    "stdlib:cache_32MiB": ("stdlib", ["cache_size=-32768"]),
    "pysqlite3:default": ("pysqlite3", []),
    "pysqlite3:cache_8MiB": ("pysqlite3", ["cache_size=-8192"]),
    "pysqlite3:cache_16MiB": ("pysqlite3", ["cache_size=-16384"]),
    "pysqlite3:cache_32MiB": ("pysqlite3", ["cache_size=-32768"]),
    "pysqlite3:cache_64MiB": ("pysqlite3", ["cache_size=-65536"]),
    "pysqlite3:mmap_4GiB": ("pysqlite3", ["mmap_size=4294967296"]),
}


def child(index: Path, name: str, n_queries: int) -> float:
    library, pragmas = CONFIGS[name]
    if library == "pysqlite3":
        from pysqlite3 import dbapi2 as module
    else:
        import sqlite3 as module
    conn = module.connect(f"file:{index / 'index.db'}?mode=ro", uri=True)
    for pragma in pragmas:
        conn.execute(f"PRAGMA {pragma}").fetchall()
    sql = (f"SELECT rowid, -{lexical._BM25} AS s FROM passages_fts WHERE passages_fts MATCH ? "
           "ORDER BY s DESC, rowid LIMIT 100")
    exprs = [lexical.match_expression(query_terms(q)) for q in queries(n_queries, 50_000, 0)]
    for e in exprs:
        conn.execute(sql, (e,)).fetchall()
    start = time.perf_counter()
    for _ in range(2):
        for e in exprs:
            conn.execute(sql, (e,)).fetchall()
    return (time.perf_counter() - start) * 1000 / (2 * len(exprs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--only", nargs="*", choices=sorted(CONFIGS), help="these configurations only")
    parser.add_argument("--child", choices=sorted(CONFIGS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.index, args.child, args.queries)))
        return
    names = args.only or list(CONFIGS)
    record = machine()
    rounds: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.rounds):
        for name in names:
            out = subprocess.run([sys.executable, __file__, str(args.index), "--child", name, "--queries",
                                  str(args.queries)], capture_output=True, text=True, check=True)
            rounds[name].append(round(json.loads(out.stdout), 2))
    print_json({
        "index": str(args.index), "queries": args.queries,
        "ms_per_query": {name: {"rounds": r, "median": statistics.median(r)} for name, r in rounds.items()},
        "machine": record,
    })


if __name__ == "__main__":
    main()
