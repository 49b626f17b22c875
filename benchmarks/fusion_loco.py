"""The hybrid default checked as a held-out check would: per collection with paired bootstrap intervals, and the
adaptive rule's parameters chosen by leave-one-collection-out over the visible splits.

    .venv/bin/python benchmarks/fusion_loco.py [--sets scifact:train,wikiqa:dev,...] [--json]

Indexes are the cached ones `searchapp eval` builds (fp32 forward pass unless --precision says). Part 1: each
collection's lexical, dense and default-hybrid nDCG@10, and the default's paired per-query margin over the
better single retriever with a 95% bootstrap interval. Part 2: for each collection, the adaptive rule's
(alpha_question, alpha_statement, lexical_spread) chosen on the *other* collections by the largest worst
margin, and how that choice does on the held-out one. `searchapp tune A B ... --cross-validate` runs the same
protocol over its full grid (convex, RRF and adaptive).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

from searchapp.config import IndexConfig  # noqa: E402
from searchapp.evaluate.stats import paired_bootstrap  # noqa: E402
from searchapp.evaluate.tune import cross_validate  # noqa: E402
from searchapp.evaluation import prepare  # noqa: E402
from searchapp.query.fusion import Fusion  # noqa: E402

SETS = "scifact:train,wikiqa:dev,antique:train,trecqa-dev:dev,trecqa-train:train"
QUESTION = (0.7, 0.8, 0.85, 0.9, 0.95)
STATEMENT = (0.4, 0.5, 0.6)
SPREAD = (0.0, 0.5, 1.0, 1.5, 2.0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default=SETS)
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    parts = {}
    for item in args.sets.split(","):
        name, split = item.split(":")
        parts[f"{name} {split}"] = prepare(DATA / name, split, IndexConfig(precision=args.precision),
                                           progress=lambda m: print(m, file=sys.stderr))
    default = Fusion()
    table = {}
    for name, p in parts.items():
        lex, den, hyb = (p.per_query(m, default) for m in ("lexical", "dense", "hybrid"))
        qs = sorted(hyb)
        lx, dn, hy = (np.array([r[q] for q in qs]) for r in (lex, den, hyb))
        better = lx if lx.mean() > dn.mean() else dn
        mean, lo, hi = paired_bootstrap(hy - better)
        table[name] = {"queries": len(qs), "lexical": lx.mean(), "dense": dn.mean(), "hybrid": hy.mean(),
                       "margin": mean, "ci95": [lo, hi],
                       "over_both": hy.mean() - max(lx.mean(), dn.mean())}
    settings = [Fusion(alpha_question=q, alpha_statement=s, lexical_spread=t)
                for q, s, t in itertools.product(QUESTION, STATEMENT, SPREAD)]
    folds = cross_validate(parts, settings=settings)
    loco = {f.held_out: {"chosen": {k: v for k, v in asdict(f.chosen).items()
                                    if k in ("alpha_question", "alpha_statement", "lexical_spread")},
                         "value": f.value, "margin": f.margin[0], "ci95": list(f.margin[1:])} for f in folds}
    out = {"default": {k: v for k, v in asdict(default).items()}, "per_collection": table, "loco": loco}
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print("| collection | queries | lexical | dense | default hybrid | margin (95% CI) |")
    print("|---|---|---|---|---|---|")
    for name, r in table.items():
        print(f"| {name} | {r['queries']} | {r['lexical']:.3f} | {r['dense']:.3f} | {r['hybrid']:.3f} | "
              f"{r['margin']:+.3f} [{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}] |")
    print()
    print("| held out | chosen on the others (q, s, spread) | hybrid | margin (95% CI) |")
    print("|---|---|---|---|")
    for name, r in loco.items():
        c = r["chosen"]
        print(f"| {name} | {c['alpha_question']}, {c['alpha_statement']}, {c['lexical_spread']} | {r['value']:.3f} | "
              f"{r['margin']:+.3f} [{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}] |")


if __name__ == "__main__":
    main()
