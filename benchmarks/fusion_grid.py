"""Hybrid fusion settings on the visible splits, on the candidates of the default index (mean pooling).

    .venv/bin/python benchmarks/fusion_grid.py [--sets scifact:train,wikiqa:dev,...] [--json]

For every set: nDCG@10 of lexical, dense, and hybrid with each normalisation x alpha, RRF, and the adaptive
default. Indexes are the same cached ones `searchapp eval` builds; candidates are gathered once per query
(k0 = 100) and every setting is scored on them. Indexes use the fp32 forward pass unless --precision says.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

from searchapp.config import IndexConfig  # noqa: E402
from searchapp.evaluation import prepare  # noqa: E402
from searchapp.query.fusion import Fusion, norm_names  # noqa: E402

SETS = "scifact:train,wikiqa:dev,antique:train,trecqa-dev:dev,trecqa-train:train"
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
    ap.add_argument("--sets", default=SETS)
    ap.add_argument("--precision", default="fp32", help="forward-pass precision of the indexes (docs: fp32)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    table: dict[str, dict[str, float]] = {}
    for item in args.sets.split(","):
        name, split = item.split(":")
        config = IndexConfig(precision=args.precision)
        prep = prepare(DATA / name, split, config, progress=lambda m: print(m, file=sys.stderr))
        col = f"{name} {split}"
        table[col] = {"lexical": prep.score("lexical")["ndcg@10"], "dense": prep.score("dense")["ndcg@10"]}
        table[col]["queries"] = prep.judged
        for label, fusion in settings().items():
            table[col][label] = prep.score("hybrid", fusion)["ndcg@10"]
        print(f"# {col} done", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(table, indent=1))
        return
    cols = list(table)
    print("| nDCG@10 | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for row in next(iter(table.values())):
        print(f"| {row} | " + " | ".join(f"{table[c][row]:.3f}" if row != "queries" else str(table[c][row])
                                          for c in cols) + " |")


if __name__ == "__main__":
    main()
