"""Known-item ranking candidates on the two visible documentation folders and the visible BEIR splits, each
against the shipped hybrid default with paired bootstrap intervals.

    .venv/bin/python benchmarks/studies/known_item_ranking.py [--data ../shared/data] [--precision P]
        [--sets scifact:train,...] [--folders pydantic-docs,fastapi-docs] [--folders-only] [--json]

Indexes are the cached ones `searchapp eval` builds (the default precision: int8 on an AVX2 CPU without bf16);
about a minute once they are cached. Every candidate re-ranks the same gathered runs (``evaluate.runner.collect``:
100 hybrid candidates a side, each with both scores), so the differences are the candidates' alone. Per folder:
first place (success@1) and MRR@10 at document level; per split: nDCG@10; each with the mean per-query change
against the default and its paired 95% bootstrap interval (``evaluate.stats.paired_bootstrap``).

Candidates:

- ``previous default``: the dense weight for questions 0.9, a document ranked by its best hybrid passage;
- ``alpha_question A``: the adaptive rule's dense weight for questions at A (0.8 shipped when measured, 0.85 now);
- ``without the agreement rule``: the document both sides rank first not kept first;
- ``best passage``: a document ranks by its best hybrid passage (no ``document_weight``, no agreement rule);
- ``document weight W, threshold T``: the shipped rule (``query/documents.py``) at other settings;
- ``rrf``: reciprocal rank fusion of both sides (k 60);
- ``document-level fusion``: each document's best cosine and best BM25 over its candidate passages, z-scored over
  the documents and fused by the adaptive weight (documents fused, not passages);
- ``sum of passages``: a document's best passage plus W times the sum of its next two passages' positive fused
  scores (no threshold);
- ``log-sum-exp``: ``t * log(sum(exp(s / t)))`` over a document's fused passage scores (a soft maximum).

A study, kept for the figure it backs: docs/evaluation.md, "Known-item ranking on two documentation folders".
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import _path  # noqa: F401  (benchmarks/ on sys.path)
import numpy as np
from _common import DATA, SETS_OPTION, parse_sets, print_json

from searchapp.config import IndexConfig
from searchapp.eval_index import prepare, prepare_folder
from searchapp.evaluate.metrics import per_query
from searchapp.evaluate.runner import Prepared, QueryRuns
from searchapp.evaluate.stats import paired_bootstrap
from searchapp.query.adaptive import adaptive_alpha
from searchapp.query.documents import group_documents
from searchapp.query.fusion import Fusion, fuse, rrf, zscore

FOLDERS = ("pydantic-docs", "fastapi-docs")

Ranker = Callable[[QueryRuns], list[str]]


def _passages(p: Prepared, fusion: Fusion, agreement: bool = True) -> Ranker:
    if agreement:
        return lambda r: p.documents(fuse(r.candidates, fusion), fusion, r.candidates)
    return lambda r: [d for d, _ in group_documents(fuse(r.candidates, fusion), p.doc_of.get, fusion.document_weight,
                                                     fusion.document_threshold)[:100]]


def _document_fusion(p: Prepared) -> Ranker:
    def rank(r: QueryRuns) -> list[str]:
        dense: dict[str, float] = {}
        lexical: dict[str, float] = {}
        for pid, cos in r.candidates.dense.items():
            doc = p.doc_of[pid]
            dense[doc] = max(dense.get(doc, -1.0), cos)
            lexical[doc] = max(lexical.get(doc, 0.0), r.candidates.lexical.get(pid, 0.0))
        zd, zl = zscore(dense), zscore(lexical)
        a = adaptive_alpha(r.candidates, p.fusion)
        return sorted(dense, key=lambda d: -(a * zd[d] + (1 - a) * zl[d]))
    return rank


def _soft(p: Prepared, combine: Callable[[list[float]], float]) -> Ranker:
    def rank(r: QueryRuns) -> list[str]:
        per: dict[str, list[float]] = {}
        for pid, s in fuse(r.candidates, p.fusion):
            per.setdefault(p.doc_of[pid], []).append(s)
        return sorted(per, key=lambda d: -combine(per[d]))
    return rank


def candidates(p: Prepared) -> dict[str, Ranker]:
    """Every candidate's document ranking of one query's runs; the first is the shipped default."""
    f = p.fusion
    before = replace(f, alpha_question=0.9, document_weight=0.0)
    out: dict[str, Ranker] = {
        "default": _passages(p, f),
        "previous default: alpha_question 0.9, best passage": _passages(p, before, agreement=False),
        "alpha_question 0.9": _passages(p, replace(f, alpha_question=0.9)),
        "without the agreement rule": _passages(p, f, agreement=False),
        "best passage": _passages(p, replace(f, document_weight=0.0), agreement=False),
    }
    for w, t in ((0.25, 1.0), (1.0, 1.0), (0.5, 0.5), (0.5, 1.5)):
        out[f"document weight {w:g}, threshold {t:g}"] = _passages(p, replace(f, document_weight=w,
                                                                               document_threshold=t))
    for aq in (0.6, 0.7):
        out[f"alpha_question {aq:g}"] = _passages(p, replace(f, alpha_question=aq))
    out["rrf"] = lambda r: p.documents(rrf(r.candidates.dense, r.candidates.lexical))
    out["document-level fusion"] = _document_fusion(p)
    out["sum of passages 0.25"] = _soft(p, lambda v: v[0] + 0.25 * sum(max(x, 0.0) for x in v[1:3]))
    out["log-sum-exp 0.5"] = _soft(p, lambda v: 0.5 * math.log(sum(math.exp(x / 0.5) for x in v)))
    return out


def score(name: str, p: Prepared, folder: bool) -> list[dict[str, Any]]:
    rows, base = [], None
    metric = "mrr@10" if folder else "ndcg@10"
    for cand, rank in candidates(p).items():
        pq = per_query({q: rank(r)[:100] for q, r in p.runs.items()}, p.data.qrels, metric)
        vals = np.array([pq[q] for q in sorted(pq)])
        base = vals if base is None else base
        mean, lo, hi = paired_bootstrap(vals - base)
        row = {"set": name, "candidate": cand, metric: round(float(vals.mean()), 4), "change": round(mean, 4),
               "ci95": [round(lo, 4), round(hi, 4)]}
        if folder:
            row["first"] = int(sum(1 for q in pq if pq[q] == 1.0))
            row["questions"] = len(pq)
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--sets", default=SETS_OPTION, help="NAME:SPLIT,... (--folders-only: none)")
    ap.add_argument("--folders", default=",".join(FOLDERS), help="folders with known-item questions")
    ap.add_argument("--precision", default=None, help="the indexes' precision (default: the product's, auto)")
    ap.add_argument("--folders-only", action="store_true", help="the two folders, not the BEIR splits")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    config = IndexConfig.from_flat(**({"precision": args.precision} if args.precision else {}))
    rows = []
    for name in filter(None, args.folders.split(",")):
        base = args.data / name
        check = prepare_folder(base / "docs", base / "questions.tsv", config)
        rows += score(name, check.prepared, folder=True)
    for name, split in [] if args.folders_only or not args.sets else parse_sets(args.sets):
        rows += score(name, prepare(args.data / name, split, config), folder=False)
    if args.json:
        print_json({"rows": rows})
        return
    for row in rows:
        value = row.get("mrr@10", row.get("ndcg@10"))
        first = f"  first {row['first']}/{row['questions']}" if "first" in row else ""
        print(f"{row['set']:14} {row['candidate']:38} {value:.4f} {row['change']:+.4f} "
              f"[{row['ci95'][0]:+.4f}, {row['ci95'][1]:+.4f}]{first}")


if __name__ == "__main__":
    main()
