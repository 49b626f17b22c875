"""Choosing a hybrid default: every candidate setting scored leave-one-collection-out over every visible collection,
the benchmark splits and the documentation folders with their known-item questions alike.

    .venv/bin/python benchmarks/defaults.py [--sets scifact:train,wikiqa:dev,...]
        [--folders pydantic-docs,fastapi-docs,flask-docs] [--precision auto] [--question 0.7,0.75,...]
        [--statement 0.4,0.5,0.6] [--spread 0,1,2] [--against Q,S,T] [--json]

The indexes are the cached ones `searchapp eval` builds and reads (a folder's brought up to date first), at
``--precision`` (``auto``: what a new index gets on this CPU); every question runs as `searchapp eval` runs it, so
through the index's query encoder, each question alone, as a search request. The candidates are the adaptive
rule's three numbers (``query/adaptive.py``): every combination of ``--question``, ``--statement`` and
``--spread``, the other fusion settings at their defaults. The metric is nDCG@10 of the document ranking (for a
folder's question, with one target: 1 / log2(1 + its rank)).

``--against`` names the setting compared with as today's default (its question weight, statement weight and spread;
else the shipped ``Fusion()``), so that a change of default can be measured after it is made.

1. Each collection: lexical, dense, today's default and the setting chosen on all the collections,
   each hybrid with its paired per-query margin over the better single mode (95% bootstrap interval,
   ``evaluate.stats.paired_bootstrap``); a folder's first places too.
2. Leave one collection out: the candidate chosen on the others as `searchapp tune` chooses
   (``evaluate.tune.cross_validate``: among the candidates significantly below the better single mode on none of
   them, the largest mean lower-bound margin), scored on the one left out, with its margin over the better single
   mode and its change against today's default, each with its paired 95% interval.
3. The verdict: the setting chosen on all ships only where no collection, left out, is significantly below its
   better single mode under the choice made without it (the interval's upper end below 0).

A maintained script (tests/integration/test_benchmarks.py runs it on tiny data): docs/evaluation.md, "Choosing a
default", has its figures and the command that made them.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
from _common import DATA, SETS_OPTION, machine, markdown_table, parse_sets, print_json

from searchapp.config import IndexConfig
from searchapp.eval_index import prepare, prepare_folder
from searchapp.evaluate.known_items import KnownItems
from searchapp.evaluate.runner import Prepared
from searchapp.evaluate.stats import paired_bootstrap
from searchapp.evaluate.tune import choose_on, cross_validate
from searchapp.query.fusion import Fusion

FOLDERS = "pydantic-docs,fastapi-docs,flask-docs"
RULE = ("alpha_question", "alpha_statement", "lexical_spread")
METRIC = "ndcg@10"


def floats(option: str) -> list[float]:
    """``"0.7,0.8"`` -> ``[0.7, 0.8]``."""
    return [float(x) for x in option.split(",") if x]


def collections(sets: str, folders: str, precision: str) -> dict[str, Prepared]:
    """Every collection's gathered runs by name (``"scifact train"``, ``"pydantic-docs"``)."""
    config = IndexConfig(precision=precision)
    out: dict[str, Prepared] = {}

    def say(line: str) -> None:
        print(line, file=sys.stderr)

    for name, split in parse_sets(sets) if sets else []:
        out[f"{name} {split}"] = prepare(DATA / name, split, config, progress=say)
    for name in folders.split(",") if folders else []:
        out[name] = prepare_folder(DATA / name / "docs", DATA / name / "questions.tsv", config, progress=say).prepared
    return out


def column(p: Prepared, mode: str, fusion: Fusion | None = None) -> np.ndarray:
    """Per-query nDCG@10 of ``mode`` in query-id order, float64 ``(queries,)``."""
    values = p.per_query(mode, fusion, METRIC)
    return np.array([values[q] for q in sorted(values)])


def interval(t: Sequence[float]) -> dict[str, Any]:
    """A paired bootstrap's ``(mean, low, high)`` as JSON."""
    return {"mean": t[0], "ci95": [t[1], t[2]]}


def rule(f: Fusion) -> dict[str, float]:
    """The adaptive rule's three numbers of ``f``."""
    return {k: getattr(f, k) for k in RULE}


def per_collection(p: Prepared, default: Fusion, chosen: Fusion) -> dict[str, Any]:
    """One collection's single modes, today's default and the choice, each hybrid against the better single mode."""
    lexical, dense = column(p, "lexical"), column(p, "dense")
    better = lexical if lexical.mean() > dense.mean() else dense
    row: dict[str, Any] = {"queries": len(better), "lexical": lexical.mean(), "dense": dense.mean(),
                           "better_single": "lexical" if better is lexical else "dense"}
    for name, fusion in (("default", default), ("chosen", chosen)):
        hybrid = column(p, "hybrid", fusion)
        row[name] = {"value": hybrid.mean(), "margin": interval(paired_bootstrap(hybrid - better))}
    if isinstance(p.data, KnownItems):
        row["first"] = {"lexical": p.known_items("lexical")["hits@1"], "dense": p.known_items("dense")["hits@1"],
                        "default": p.known_items("hybrid", default)["hits@1"],
                        "chosen": p.known_items("hybrid", chosen)["hits@1"]}
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default=SETS_OPTION)
    ap.add_argument("--folders", default=FOLDERS)
    ap.add_argument("--precision", default="auto")
    ap.add_argument("--question", default="0.7,0.75,0.8,0.85,0.9,0.95,1.0")
    ap.add_argument("--statement", default="0.4,0.5,0.6")
    ap.add_argument("--spread", default="0,1,2")
    ap.add_argument("--against", default="", help="Q,S,T: today's default (else the shipped one)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    record = machine(precision=args.precision)
    parts = collections(args.sets, args.folders, args.precision)
    candidates = [Fusion(alpha_question=q, alpha_statement=s, lexical_spread=t) for q, s, t in
                  itertools.product(floats(args.question), floats(args.statement), floats(args.spread))]
    default = Fusion(**dict(zip(RULE, floats(args.against), strict=True))) if args.against else Fusion()
    chosen = choose_on(parts, candidates, METRIC)
    table = {name: per_collection(p, default, chosen) for name, p in parts.items()}
    folds = cross_validate(parts, METRIC, settings=candidates, default=default) if len(parts) > 1 else []
    loco = {f.held_out: {"queries": f.queries, "chosen": rule(f.chosen), "value": f.value,
                         "margin": interval(f.margin), "against_default": interval(f.against_default)}
            for f in folds}
    below = [name for name, r in loco.items() if r["margin"]["ci95"][1] < 0]
    out = {"machine": record, "metric": METRIC, "default": asdict(default), "chosen_on_all": rule(chosen),
           "candidates": len(candidates), "collections": table, "loco": loco, "below": below,
           "ships": bool(loco) and not below}
    if args.json:
        print_json(out)
        return
    report(out)


def report(out: dict[str, Any]) -> None:
    """The tables for a person (docs/evaluation.md shows them)."""

    def ci(r: dict[str, Any]) -> str:
        return f"{r['mean']:+.3f} [{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}]"

    def first(r: dict[str, Any], key: str) -> str:
        return f" ({r['first'][key]}/{r['queries']} first)" if "first" in r else ""

    print(markdown_table(
        ["collection", "queries", "lexical", "dense", "today's default", "margin", "chosen on all", "margin"],
        [[name, r["queries"], f"{r['lexical']:.3f}{first(r, 'lexical')}", f"{r['dense']:.3f}{first(r, 'dense')}",
          f"{r['default']['value']:.3f}{first(r, 'default')}", ci(r["default"]["margin"]),
          f"{r['chosen']['value']:.3f}{first(r, 'chosen')}", ci(r["chosen"]["margin"])]
         for name, r in out["collections"].items()]))
    print()
    print(markdown_table(
        ["left out", "chosen on the others (question, statement, spread)", "nDCG@10", "margin over the better "
         "single mode", "against today's default"],
        [[name, "{alpha_question:g}, {alpha_statement:g}, {lexical_spread:g}".format(**r["chosen"]),
          f"{r['value']:.3f}", ci(r["margin"]), ci(r["against_default"])] for name, r in out["loco"].items()]))
    print()
    print("chosen on all (question, statement, spread): "
          "{alpha_question:g}, {alpha_statement:g}, {lexical_spread:g}".format(**out["chosen_on_all"]))
    print("ships" if out["ships"] else f"does not ship: significantly below held out on {', '.join(out['below'])}")


if __name__ == "__main__":
    main()
