"""Hybrid fusion settings on the visible splits, on the candidates of the default index (mean pooling).

    .venv/bin/python benchmarks/studies/fusion_grid.py [--sets scifact:train,wikiqa:dev,...] [--json]

For every set: nDCG@10 of lexical, dense, and hybrid with each normalisation x alpha, RRF, and the adaptive
default. Indexes are the same cached ones `searchapp eval` builds; candidates are gathered once per query
(k0 = 100) and every setting is scored on them. Indexes use the fp32 forward pass unless --precision says.

A study, kept for the figure it backs: docs/evaluation.md, "All fusion methods, nDCG@10".
"""

from __future__ import annotations

import argparse
import sys

import _path  # noqa: F401  (benchmarks/ on sys.path)
from _common import DATA, SETS_OPTION, markdown_table, parse_sets, print_json

from searchapp.config import IndexConfig
from searchapp.eval_index import prepare
from searchapp.query.fusion import Fusion, norm_names

ALPHAS = (0.3, 0.5, 0.7, 0.8, 0.9)


def settings() -> dict[str, Fusion]:
    out = {}
    for norm in norm_names():
        for a in ALPHAS:
            out[f"convex {norm} {a}"] = Fusion(method="convex", norm=norm, alpha=a)
    out["rrf 60"] = Fusion(method="rrf", rrf_k=60)
    out["adaptive (default)"] = Fusion()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default=SETS_OPTION)
    ap.add_argument("--precision", default="fp32", help="forward-pass precision of the indexes (docs: fp32)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    table: dict[str, dict[str, float]] = {}
    for name, split in parse_sets(args.sets):
        config = IndexConfig(precision=args.precision)
        prep = prepare(DATA / name, split, config, progress=lambda m: print(m, file=sys.stderr))
        col = f"{name} {split}"
        table[col] = {"lexical": prep.score("lexical")["ndcg@10"], "dense": prep.score("dense")["ndcg@10"]}
        table[col]["queries"] = prep.judged
        for label, fusion in settings().items():
            table[col][label] = prep.score("hybrid", fusion)["ndcg@10"]
        print(f"# {col} done", file=sys.stderr, flush=True)
    if args.json:
        print_json(table)
        return
    cols = list(table)
    print(markdown_table(["nDCG@10", *cols],
                         [[row, *(f"{table[c][row]:.3f}" if row != "queries" else table[c][row] for c in cols)]
                          for row in next(iter(table.values()))]))


if __name__ == "__main__":
    main()
