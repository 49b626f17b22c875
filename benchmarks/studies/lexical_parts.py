"""Lexical scoring in parts on several cores, and what SQLite's memory statistics do to it.

    .venv/bin/python benchmarks/studies/lexical_parts.py DIR [--queries 100] [--json]

DIR: a folder index of benchmarks/query.py's synthetic corpus (its --index-dir), whose queries (4 mid-frequency
words of the same vocabulary) are used here. Two measurements, query embedding excluded:

- ``streams``: the FTS5 statement ``store.lexical.search`` runs (bm25() of every match, top 100), the queries run
  one after the other on one connection, then the same on two threads at once (two connections), then on two
  processes at once; each in a fresh interpreter with SQLite's memory statistics left on (the library's default)
  and turned off (``store.schema.memory_statistics_off``). The ratio ``two threads / one stream`` is about 2
  where the threads take turns, about 1 where they run at once.
- ``search``: ``Index.search`` p50 / p95 ms in lexical and hybrid mode with the lexical side in one part and in
  parts (``store.folder.PARALLEL_MIN`` set past and below the index's size), alternately for three rounds, in
  this process (statistics off, as every searchapp process has them).

A study, kept for the figure it backs: docs/performance.md, "Lexical scoring in parts, and SQLite's memory
statistics".
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import _path  # noqa: F401  (benchmarks/ on sys.path)
import numpy as np
from _common import call_ms, machine, print_json
from query import queries

from searchapp.sqlite_driver import dbapi


def streams(folder: Path, n: int, statistics_off: bool) -> dict[str, float]:
    """Seconds for the queries as one stream, as two streams on two threads at once, and on two processes."""
    from searchapp.analysis import query_terms
    from searchapp.store import lexical, schema

    if statistics_off:
        assert schema.memory_statistics_off(), "the statistics could not be turned off"
    uri = f"file:{folder / 'index.db'}?mode=ro"
    conns = [dbapi().connect(uri, uri=True, check_same_thread=False) for _ in range(2)]
    exprs = [lexical.match_expression(query_terms(q)) for q in queries(n, 50_000, 0)]
    sql = (f"SELECT rowid, -{lexical._BM25} AS s FROM passages_fts WHERE passages_fts MATCH ? "
           "ORDER BY s DESC, rowid LIMIT 100")

    def run(conn: Any) -> None:
        for e in exprs:
            conn.execute(sql, (e,)).fetchall()

    for c in conns:
        run(c)  # warm: the pages in the OS cache and each connection's own
    t = time.perf_counter()
    run(conns[0])
    one = time.perf_counter() - t
    with ThreadPoolExecutor(2) as pool:
        t = time.perf_counter()
        list(pool.map(run, conns))
        threads = time.perf_counter() - t
    pid = os.fork()
    if pid == 0:
        run(conns[0])
        os._exit(0)
    t = time.perf_counter()
    run(conns[1])
    os.waitpid(pid, 0)
    processes = time.perf_counter() - t
    return {"one_stream_s": round(one, 3), "two_threads_s": round(threads, 3), "two_processes_s": round(processes, 3),
            "threads_ratio": round(threads / one, 2), "processes_ratio": round(processes / one, 2)}


def search(folder: Path, n: int, rounds: int = 3) -> dict[str, object]:
    """p50 / p95 ms per round of ``Index.search`` over the queries, one part and parts alternately (``rounds``
    times, after a warm-up pass: measured one after the other, the first would also pay for a colder cache)."""
    from query import StubEncoder

    from searchapp import Index
    from searchapp.store import folder as folder_store

    qs = queries(n, 50_000, 0)
    out: dict[str, list[tuple[float, float]]] = {}
    with Index(folder, encoder=StubEncoder(0)) as ix:
        for mode in ("lexical", "hybrid"):
            call_ms(lambda q, mode=mode: ix.search(q, k=10, mode=mode), qs)
            for _ in range(rounds):
                for label, threshold in (("one_part", 2**62), ("parts", 1)):
                    folder_store.PARALLEL_MIN = threshold
                    ms = call_ms(lambda q, mode=mode: ix.search(q, k=10, mode=mode), qs)
                    out.setdefault(f"{mode}_{label}_p50_p95_ms", []).append(
                        (round(statistics.median(ms), 2), round(float(np.percentile(ms, 95)), 2)))
    return dict(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--streams", choices=("on", "off"), help=argparse.SUPPRESS)  # internal: one fresh process
    args = ap.parse_args()
    if args.streams:
        print(json.dumps(streams(args.folder, args.queries, args.streams == "off")))
        return
    result: dict[str, object] = {"machine": machine(), "folder": str(args.folder), "queries": args.queries}
    for state in ("on", "off"):
        done = subprocess.run([sys.executable, __file__, str(args.folder), "--queries", str(args.queries),
                               "--streams", state], capture_output=True, text=True, check=True)
        result[f"streams_statistics_{state}"] = json.loads(done.stdout)
    result["search"] = search(args.folder, args.queries)
    if args.json:
        print_json(result)
        return
    for key, value in result.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
