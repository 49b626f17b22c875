"""The hybrid default checked as a held-out check would: per collection with paired bootstrap intervals, and the
adaptive rule's parameters chosen by leave-one-collection-out over the visible splits.

    .venv/bin/python benchmarks/studies/fusion_loco.py [--sets scifact:train,wikiqa:dev,...] [--json]

Indexes are the cached ones `searchapp eval` builds (fp32 forward pass unless --precision says). Part 1: each
collection's lexical, dense and default-hybrid nDCG@10, and the default's paired per-query margin over the
better single retriever with a 95% bootstrap interval. Part 2: for each collection, the adaptive rule's
(alpha_question, alpha_statement, lexical_spread) chosen on the *other* collections by the largest worst
margin (each margin counted by its one-sided 95% lower bound, as `searchapp tune` chooses), and how that choice
does on the held-out one; and the choice on all of them. `searchapp tune A B ... --cross-validate` runs the same
protocol over its full grid (convex, RRF and adaptive).

A study, kept for the figure it backs: docs/evaluation.md, "The default: query-adaptive fusion" ("Checked as a held-
out check would", "The held-out non-factoid gap").
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import asdict
from typing import Any

import _path  # noqa: F401  (benchmarks/ on sys.path)
import numpy as np
from _common import DATA, SETS_OPTION, markdown_table, parse_sets, print_json

from searchapp.config import IndexConfig
from searchapp.eval_index import prepare
from searchapp.evaluate.stats import paired_bootstrap
from searchapp.evaluate.tune import choose_on, cross_validate
from searchapp.query.fusion import Fusion

QUESTION = (0.7, 0.8, 0.85, 0.9, 0.95, 1.0)
STATEMENT = (0.4, 0.5, 0.6)
SPREAD = (0.0, 0.5, 1.0, 1.5, 2.0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default=SETS_OPTION)
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    parts = {}
    for name, split in parse_sets(args.sets):
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
    rule = ("alpha_question", "alpha_statement", "lexical_spread")
    on_all = {k: v for k, v in asdict(choose_on(parts, settings)).items() if k in rule}
    out = {"default": {k: v for k, v in asdict(default).items()}, "per_collection": table, "loco": loco,
           "chosen_on_all": on_all}
    if args.json:
        print_json(out)
        return
    print(markdown_table(
        ["collection", "queries", "lexical", "dense", "default hybrid", "margin (95% CI)"],
        [[name, r["queries"], f"{r['lexical']:.3f}", f"{r['dense']:.3f}", f"{r['hybrid']:.3f}", interval(r)]
         for name, r in table.items()]))
    print()
    print(markdown_table(
        ["held out", "chosen on the others (q, s, spread)", "hybrid", "margin (95% CI)"],
        [[name, "{alpha_question}, {alpha_statement}, {lexical_spread}".format(**r["chosen"]), f"{r['value']:.3f}",
          interval(r)] for name, r in loco.items()]))
    print()
    print("chosen on all (q, s, spread): {alpha_question}, {alpha_statement}, {lexical_spread}".format(**on_all))


def interval(r: dict[str, Any]) -> str:
    """A row's margin and its 95% interval: ``+0.012 [-0.003, +0.027]``."""
    return f"{r['margin']:+.3f} [{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}]"


if __name__ == "__main__":
    main()
