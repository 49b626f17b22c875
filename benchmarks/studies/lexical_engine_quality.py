"""The tantivy lexical engine against FTS5 on every visible split and folder: lexical and hybrid nDCG@10 (and a
folder's first places), with the paired 95% bootstrap interval of tantivy minus FTS5 per query.

    .venv/bin/python benchmarks/studies/lexical_engine_quality.py [--precision int8] [--sets scifact:train,...]
        [--folders pydantic-docs,fastapi-docs,flask-docs] [--json]

Each collection's cached eval index (`searchapp eval` builds it; FTS5) is copied, its recorded lexical engine set to
tantivy, and the copy's tantivy index rebuilt from the stored passages on its first read: the same passages and
vectors, only the lexical engine differs. Every question runs as `searchapp eval` runs it.

A study, kept for the figure it backs: docs/performance.md, "A lexical engine that stops at the top k".
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import _path  # noqa: F401  (benchmarks/ on sys.path)
import numpy as np
from _common import DATA, SETS_OPTION, machine, markdown_table, parse_sets, print_json

from searchapp.config import IndexConfig
from searchapp.eval_index import prepare, prepare_folder
from searchapp.evaluate.runner import Prepared, index_path
from searchapp.evaluate.stats import paired_bootstrap
from searchapp.sqlite_driver import dbapi

FOLDERS = ("pydantic-docs", "fastapi-docs", "flask-docs")


def gathered(name: str, split: str | None, config: IndexConfig, index_dir: str | None) -> Prepared:
    if split is None:
        check = prepare_folder(DATA / name / "docs", DATA / name / "questions.tsv", config, index_dir=index_dir)
        return check.prepared
    return prepare(DATA / name, split, config, index_dir=index_dir)


def as_tantivy(cache: Path, scratch: Path) -> Path:
    """A copy of the index at ``cache`` whose recorded lexical engine is tantivy."""
    copy = scratch / cache.name
    shutil.copytree(cache, copy, ignore=shutil.ignore_patterns("write.lock", "lexical"))
    conn = dbapi().connect(str(copy / "index.db"))
    with conn:
        conn.execute("INSERT OR REPLACE INTO settings(key, value) VALUES ('lexical_engine', ?)",
                     (json.dumps("tantivy"),))
    conn.close()
    return copy


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--precision", default="int8")
    ap.add_argument("--sets", default=SETS_OPTION, help="NAME:SPLIT,... ('' for none)")
    ap.add_argument("--folders", default=",".join(FOLDERS), help="folders with known-item questions ('' for none)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    config = IndexConfig(precision=args.precision)
    out: dict[str, Any] = {"machine": machine(precision=args.precision), "collections": {}}
    with tempfile.TemporaryDirectory() as scratch:
        folders = [(f, None) for f in args.folders.split(",") if f]
        for name, split in [*(parse_sets(args.sets) if args.sets else []), *folders]:
            fts5 = gathered(name, split, config, None)  # builds the cache where it is missing
            folder = DATA / name / "docs" if split is None else DATA / name
            cache = index_path(folder, config, kind="folder" if split is None else "beir")
            tv = gathered(name, split, config, str(as_tantivy(cache, Path(scratch))))
            row: dict[str, Any] = {"queries": len(fts5.per_query("lexical"))}
            for mode in ("lexical", "hybrid"):
                a, b = fts5.per_query(mode), tv.per_query(mode)
                qs = sorted(a)
                va, vb = np.array([a[q] for q in qs]), np.array([b[q] for q in qs])
                mean, lo, hi = paired_bootstrap(vb - va)
                row[mode] = {"fts5": va.mean(), "tantivy": vb.mean(), "change": mean, "ci95": [lo, hi]}
                if split is None:
                    row[mode]["first"] = [fts5.known_items(mode)["hits@1"], tv.known_items(mode)["hits@1"]]
            out["collections"][f"{name} {split}" if split else name] = row
            print(f"{name}: done", file=sys.stderr)
    if args.json:
        print_json(out)
        return

    def cell(r: dict[str, Any]) -> str:
        first = f" ({r['first'][0]} -> {r['first'][1]} first)" if "first" in r else ""
        return (f"{r['fts5']:.3f} -> {r['tantivy']:.3f}{first}, {r['change']:+.3f} "
                f"[{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}]")

    print(markdown_table(["collection", "queries", "lexical: FTS5 -> tantivy", "hybrid: FTS5 -> tantivy"],
                         [[n, r["queries"], cell(r["lexical"]), cell(r["hybrid"])]
                          for n, r in out["collections"].items()]))


if __name__ == "__main__":
    main()
