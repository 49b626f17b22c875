"""Encoding speed of the bundled models against each other, on the same passages, in one process.

    .venv/bin/python benchmarks/studies/models.py [--passages 256] [--pieces 126] [--runs 3] [--threads 2] [--json]

Passages are the first SciFact abstracts from ../shared/data cut to --pieces word pieces (of the MiniLM
tokenizer; both bundled models tokenise English alike to within a few pieces, and each model's own count is
what the throughput divides by); batches of 32, mean pooling. Models are timed in turn within each run
(MiniLM first) so that a busy machine slows both alike; each figure is the median over --runs, and the ratio
is against all-MiniLM-L6-v2 at fp32 in the same run. A model whose files are not installed is reported as
missing (all-mpnet-base-v2 needs its five part packages).

A study, kept for the figure it backs: docs/pooling.md, "A larger model: all-mpnet-base-v2".
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import _path  # noqa: F401  (benchmarks/ on sys.path)
from _common import command, machine, markdown_table, print_json
from encode import passages

from searchapp.encode.pooling import get_pooling
from searchapp.encode.transformer import TransformerModel
from searchapp.errors import SearchappError

MODELS = ("all-MiniLM-L6-v2", "all-mpnet-base-v2")


def time_model(model: TransformerModel, texts: list[str], batch: int) -> tuple[float, int]:
    """Seconds to embed `texts` with mean pooling, and the word pieces the model saw."""
    pool = get_pooling("mean")
    pieces = 0
    t = time.perf_counter()
    for i in range(0, len(texts), batch):
        states = model.forward(texts[i : i + batch], truncate=True)
        pool(states.hidden_states, states.attention_mask)
        pieces += int(states.attention_mask.sum())
    return time.perf_counter() - t, pieces


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=256)
    ap.add_argument("--pieces", type=int, default=126)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--precision", nargs="+", default=["fp32", "bf16"])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    record = machine(threads=args.threads)
    texts = passages(args.passages, args.pieces)
    loaded: dict[tuple[str, str], TransformerModel] = {}
    missing: dict[str, str] = {}
    for name in MODELS:
        for prec in args.precision:
            try:
                loaded[(name, prec)] = TransformerModel(name, threads=args.threads, precision=prec)
            except SearchappError as e:
                missing[name] = str(e)
                break
    for m in loaded.values():  # warm-up: first calls allocate and pick kernels
        m.forward(texts[: args.batch], truncate=True)
    times: dict[tuple[str, str], list[float]] = {k: [] for k in loaded}
    pieces: dict[tuple[str, str], int] = {}
    for _ in range(args.runs):
        for key, m in loaded.items():
            sec, n = time_model(m, texts, args.batch)
            times[key].append(sec)
            pieces[key] = n
    base = statistics.median(times[(MODELS[0], "fp32")]) if (MODELS[0], "fp32") in times else None
    rows = []
    for (name, prec), secs in times.items():
        med = statistics.median(secs)
        m = loaded[(name, prec)]
        rows.append({
            "model": name, "precision": m.precision, "layers": m.num_layers, "passages": len(texts),
            "word_pieces": pieces[(name, prec)], "seconds": round(med, 3),
            "word_pieces_per_s": round(pieces[(name, prec)] / med),
            "time_vs_minilm_fp32": round(med / base, 2) if base else None,
        })
    result = {"machine": record, "command": command(), "runs": args.runs, "rows": rows, "missing": missing}
    if args.json:
        print_json(result)
        return
    print(markdown_table(
        ["model", "layers", "precision", "word pieces/s", "time vs MiniLM fp32"],
        [[r["model"], r["layers"], r["precision"], r["word_pieces_per_s"], r["time_vs_minilm_fp32"]] for r in rows]))
    for name, why in missing.items():
        print(f"{name}: not installed ({why})", file=sys.stderr)


if __name__ == "__main__":
    main()
