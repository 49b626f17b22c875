"""Cost of each pooling strategy against the model's forward pass, on the same passages, in one process.

    .venv/bin/python benchmarks/encode.py [--passages 256] [--runs 3] [--threads 2] [--json]

Passages are the first SciFact abstracts from ../shared/data cut to 126 word pieces (128 with [CLS]/[SEP]);
batches of 32. For every batch the forward pass (with all hidden states) is timed once, then each pooling on
those hidden states; a strategy's time is forward + its pooling, its ratio that over the forward pass alone.
The per-token SBERT-WK (tests/sbert_wk_reference.py, float64 loops) runs on a small sample and is scaled.
Each figure is the median over --runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
from _common import DATA, machine, machine_line, print_json

from searchapp.encode.pooling import get_pooling
from searchapp.encode.tokenizer import load_tokenizer
from searchapp.encode.transformer import TransformerModel

STRATEGIES = {
    "mean": ("mean", {}),
    "cls": ("cls", {}),
    "layers -2,-1": ("layers", {"layers": [-2, -1]}),
    "layers all 7": ("layers", {"layers": list(range(7))}),
    "sbert-wk 2,1 (default: the paper's scaled to 6 layers)": ("sbert-wk", {}),
    "sbert-wk 4,2 (paper's setting)": ("sbert-wk", {"layer_start": 4, "window": 2}),
    "sbert-wk 0,2 (all 7 states)": ("sbert-wk", {"layer_start": 0, "window": 2}),
}


def passages(n: int, pieces: int) -> list[str]:
    tok = load_tokenizer("all-MiniLM-L6-v2")
    out: list[str] = []
    with (DATA / "scifact" / "corpus.jsonl").open() as fh:
        for line in fh:
            text = json.loads(line)["text"]
            offs = tok.encode(text, add_special_tokens=False).offsets
            if len(offs) >= pieces:
                out.append(text[: offs[pieces - 1][1]])
            if len(out) == n:
                break
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=256)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reference-sample", type=int, default=4)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    record = machine(threads=args.threads)
    texts = passages(args.passages, 126)
    model = TransformerModel("all-MiniLM-L6-v2", threads=args.threads)
    pools = {name: get_pooling(p, **params) for name, (p, params) in STRATEGIES.items()}
    model.forward(texts[: args.batch])  # warm-up
    runs: list[dict[str, float]] = []
    for _ in range(args.runs):
        t = dict.fromkeys(["forward", *pools], 0.0)
        for i in range(0, len(texts), args.batch):
            start = time.perf_counter()
            states = model.forward(texts[i : i + args.batch])
            t["forward"] += time.perf_counter() - start
            for name, fn in pools.items():
                start = time.perf_counter()
                fn(states.hidden_states, states.attention_mask)
                t[name] += time.perf_counter() - start
        runs.append(t)
    from tests.sbert_wk_reference import reference_sbert_wk

    sample = model.forward(texts[: args.reference_sample])
    start = time.perf_counter()
    for i in range(args.reference_sample):
        n = int(sample.attention_mask[i].sum())
        reference_sbert_wk(sample.hidden_states[:, i, :n, :], 4, 2)
    ref_per_passage = (time.perf_counter() - start) / args.reference_sample

    forward = statistics.median(r["forward"] for r in runs)
    rows = [{"strategy": "forward pass (all hidden states)", "passages_per_s": len(texts) / forward, "ratio": 1.0}]
    for name in pools:
        total = statistics.median(r["forward"] + r[name] for r in runs)
        ratio = statistics.median((r["forward"] + r[name]) / r["forward"] for r in runs)
        rows.append({"strategy": name, "passages_per_s": len(texts) / total, "ratio": ratio})
    per_token_total = forward / len(texts) + ref_per_passage
    rows.append({
        "strategy": "sbert-wk 4,2 per-token reference (sample)",
        "passages_per_s": 1.0 / per_token_total,
        "ratio": per_token_total / (forward / len(texts)),
    })
    result = {
        "machine": record,
        "passages": len(texts), "word_pieces": 128, "batch": args.batch, "runs": args.runs, "rows": rows,
    }
    if args.json:
        print_json(result)
        return
    print(f"{machine_line(record)}; {len(texts)} passages of 128 word pieces, batch {args.batch}, "
          f"median of {args.runs}")
    print(f"{'strategy':<44} {'passages/s':>10} {'x forward':>10}")
    for r in rows:
        print(f"{r['strategy']:<44} {r['passages_per_s']:>10.1f} {r['ratio']:>10.3f}")


if __name__ == "__main__":
    main()
