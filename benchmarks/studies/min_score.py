"""What a --min-score cut-off keeps and drops: for each threshold, among the default hybrid ranking's top 10
documents of every judged query, the share of relevant documents kept (cosine >= threshold) and the share of
the others dropped.

    .venv/bin/python benchmarks/studies/min_score.py [--sets scifact:train,wikiqa:dev,...] [--json]

Indexes are the cached ones `searchapp eval` builds (fp32 forward pass). A document's cosine is that of the
passage that puts it in the ranking (its best), the quantity `--min-score` compares. "Relevant" is a qrels grade
above 0; every other document in the top 10, judged or not, counts as not relevant (in the pooled collections
most are judged). Shares are pooled over all the queries of a collection (micro averages).

A study, kept for the figure it backs: docs/evaluation.md, "A cosine cut-off (`--min-score`)".
"""

from __future__ import annotations

import argparse
import sys

import _path  # noqa: F401  (benchmarks/ on sys.path)
from _common import DATA, SETS_OPTION, markdown_table, parse_sets, print_json

from searchapp.config import IndexConfig
from searchapp.eval_index import prepare
from searchapp.query.fusion import fuse

THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6)
TOP = 10


def top_documents(
    run: list[tuple[int, float]], doc_of: dict[int, str], cosine: dict[int, float]
) -> list[tuple[str, float]]:
    """The first ``TOP`` documents of a passage run, each with its best passage's cosine."""
    out: dict[str, float] = {}
    for pid, _ in run:
        doc = doc_of.get(pid)
        if doc is not None and doc not in out:
            out[doc] = cosine[pid]
            if len(out) == TOP:
                break
    return list(out.items())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default=SETS_OPTION)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    table: dict[str, dict[str, object]] = {}
    for name, split in parse_sets(args.sets):
        p = prepare(DATA / name, split, IndexConfig(precision="fp32"), progress=lambda m: print(m, file=sys.stderr))
        relevant: list[float] = []
        other: list[float] = []
        for q, runs in p.runs.items():
            rels = {d for d, g in p.data.qrels.get(q, {}).items() if g > 0}
            if not rels:
                continue
            for doc, cos in top_documents(fuse(runs.candidates, p.fusion), p.doc_of, runs.candidates.dense):
                (relevant if doc in rels else other).append(cos)
        table[f"{name} {split}"] = {
            "queries": p.judged, "relevant": len(relevant), "other": len(other),
            "thresholds": {
                t: {"relevant_kept": sum(c >= t for c in relevant) / max(len(relevant), 1),
                    "other_dropped": sum(c < t for c in other) / max(len(other), 1)}
                for t in THRESHOLDS
            },
        }
    if args.json:
        print_json(table)
        return
    print(markdown_table(
        ["collection", "top-10 relevant / other", *(f"{t:g}: kept / dropped" for t in THRESHOLDS)],
        [[name, f"{row['relevant']} / {row['other']}",
          *(f"{v['relevant_kept']:.0%} / {v['other_dropped']:.0%}" for v in row["thresholds"].values())]  # type: ignore[union-attr]
         for name, row in table.items()]))


if __name__ == "__main__":
    main()
