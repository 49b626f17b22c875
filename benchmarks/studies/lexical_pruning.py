"""Could the lexical side skip matches safely? Term pruning by score bounds (MaxScore) on a benchmarks/query.py index.

    .venv/bin/python benchmarks/studies/lexical_pruning.py INDEX_DIR [--k 100] [--queries 100] [--seed 0]

For each of the benchmark's queries (4 mid-frequency words), over the whole index in one part: every term's
document frequency and BM25 idf as FTS5's ``bm25()`` computes it, the top ``--k`` by ``bm25()`` and its k-th score
(the threshold a passage must beat). A term's contribution to a passage's score is below idf x (k1 + 1) whatever
its frequency and the passage's length, so the most common terms whose bounds add up to less than the threshold
cannot lift a passage that matches none of the others into the top k: those passages need not be scored. Counts,
per query, the share of matches that leaves out, taking the threshold at its true value (the best any pruning
that scores passages one at a time could know) and the bound as FTS5's own idf gives it.

Prints JSON: the mean and median share of matches that could be skipped, how many queries could skip any, and the
machine. A study, kept for the figure it backs: docs/performance.md, "The SQLite library, and the page cache".
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

import _path  # noqa: F401  (benchmarks/ on sys.path)
from _common import machine, print_json
from query import queries

from searchapp.analysis import query_terms
from searchapp.sqlite_driver import dbapi
from searchapp.store import lexical

K1 = 1.2  # bm25()'s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", type=Path)
    parser.add_argument("--k", type=int, default=100, help="the depth ranked (a hybrid query's k0 is 100)")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    conn = dbapi().connect(f"file:{args.index / 'index.db'}?mode=ro", uri=True)

    def count(terms: list[str]) -> int:
        sql = "SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?"
        return int(conn.execute(sql, (lexical.match_expression(terms),)).fetchone()[0])

    n = int(conn.execute("SELECT count(*) FROM passages").fetchone()[0])
    skipped: list[float] = []
    for q in queries(args.queries, 50_000, args.seed):
        terms = query_terms(q)
        bound = {t: max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6) * (K1 + 1) for t, df in
                 ((t, count([t])) for t in terms)}
        top = conn.execute(f"SELECT rowid, -{lexical._BM25} AS s FROM passages_fts WHERE passages_fts MATCH ? "
                           "ORDER BY s DESC, rowid LIMIT ?", (lexical.match_expression(terms), args.k)).fetchall()
        threshold = top[-1][1] if len(top) == args.k else 0.0
        prunable, total = [], 0.0
        for t in sorted(terms, key=bound.__getitem__):  # the most common (smallest bound) first
            if total + bound[t] >= threshold or len(prunable) == len(terms) - 1:
                break
            prunable.append(t)
            total += bound[t]
        kept = [t for t in terms if t not in prunable]
        skipped.append(1 - count(kept) / max(count(terms), 1))
    print_json({
        "index": str(args.index), "k": args.k, "queries": len(skipped), "passages": n,
        "share_of_matches_skipped_mean": round(statistics.mean(skipped), 4),
        "share_of_matches_skipped_median": round(statistics.median(skipped), 4),
        "queries_that_skip_any": sum(s > 0 for s in skipped), "machine": machine(),
    })


if __name__ == "__main__":
    main()
