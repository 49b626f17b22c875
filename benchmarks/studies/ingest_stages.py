"""Where a whole ingest's time goes beside the encoder: the stages of one ingest, each timed by wrapping it.

    .venv/bin/python benchmarks/studies/ingest_stages.py [--docs 400] [--precision bf16] [--runs 2]

Writes the first --docs SciFact abstracts as .txt files (as benchmarks/ingest.py does), then per run ingests them
into a new index whose encoder is loaded and warmed beforehand (``ingest.warm``), timing the walk (``plan``),
reading and splitting each file (``prepare``), the encoder's calls (``encode``), the commits (SQLite, FTS5, FAISS
in memory) and the stores' flushes; ``other`` is the rest of the ingest's own seconds. Prints one JSON line per
run, ``version`` the commit timed. Run it with ``SEARCHAPP_BENCH_CHECKOUT=<another checkout>`` to time that
version's pipeline with the same script.

A study, kept for the figure it backs: docs/performance.md, "On a CPU with AVX-512 bf16 and no AMX".
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _path  # noqa: F401  (benchmarks/ on sys.path)
from _common import machine
from ingest import warm, write_corpus

from searchapp import Index, IndexConfig
from searchapp.ingest import pipeline

SECONDS: dict[str, float] = {}


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, adding the seconds of each call to ``SECONDS[name]``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            SECONDS[name] = SECONDS.get(name, 0.0) + time.perf_counter() - start

    return wrapper


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=400)
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    pipeline.prepare = timed("prepare", pipeline.prepare)  # type: ignore[assignment]
    pipeline.Ingest._commit = timed("commit", pipeline.Ingest._commit)  # type: ignore[method-assign]
    pipeline.Ingest._plan = timed("plan", pipeline.Ingest._plan)  # type: ignore[method-assign]
    commit = machine()["commit"]
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        write_corpus(corpus, args.docs)
        for run in range(args.runs):
            SECONDS.clear()
            with Index(Path(tmp) / f"ix-{run}", create=True, config=IndexConfig(precision=args.precision)) as ix:
                encoder = ix.encoder
                warm(encoder, 32)  # the Index default batch
                encoder.encode = timed("encode", encoder.encode)  # type: ignore[method-assign]
                ix.stores.flush = timed("stores_flush", ix.stores.flush)  # type: ignore[method-assign]
                summary = ix.ingest(corpus)
            stages = {k: round(v, 3) for k, v in SECONDS.items()}
            print(json.dumps({"run": run + 1, "version": commit, "precision": args.precision,
                              "encoder": type(encoder).__name__,
                              "passages": summary.passages_embedded, "ingest_s": round(summary.seconds, 3),
                              **stages, "other": round(summary.seconds - sum(SECONDS.values()), 3),
                              "load_avg_1m": round(os.getloadavg()[0], 2)}), flush=True)


if __name__ == "__main__":
    main()
