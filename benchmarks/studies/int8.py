"""Int8 (PyTorch dynamic quantisation of every Linear layer) against bf16 and fp32: forward speed and quality.

    .venv/bin/python benchmarks/studies/int8.py [--sets trecqa-dev,trecqa-train] [--runs 3] [--json]

Speed: 128 SciFact abstracts cut to 126 word pieces, batches of 32, mean pooling, the three precisions timed in
turn within each run (median of --runs), ratio to fp32; the lowest cosine of any passage's int8 or bf16 vector to
its fp32 vector. Quality: dense nDCG@10 of each precision on the given visible splits
(benchmarks/studies/pooling_sweep.py's retrieval scoring). A precision is adoptable only if nDCG@10 stays within
0.005 of fp32 on every split.

A study, kept for the figure it backs: docs/performance.md, "Int8: faster, but not within the quality bar".
"""

from __future__ import annotations

import argparse
import statistics
import time

import _path  # noqa: F401  (benchmarks/ on sys.path)
import pooling_sweep
import torch
from _common import SETS, command, markdown_table, print_json
from encode import passages

from searchapp.encode.pooling import get_pooling
from searchapp.encode.transformer import TransformerModel


def models(threads: int) -> dict[str, TransformerModel]:
    out = {p: TransformerModel("all-MiniLM-L6-v2", threads=threads, precision=p) for p in ("fp32", "bf16")}
    q = TransformerModel("all-MiniLM-L6-v2", threads=threads, precision="fp32")
    q.model = torch.ao.quantization.quantize_dynamic(q.model, {torch.nn.Linear}, dtype=torch.qint8)
    out["int8"] = q
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="trecqa-dev,trecqa-train")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ms = models(args.threads)
    pool = get_pooling("mean")
    texts = passages(128, 126)

    def embed(m: TransformerModel) -> torch.Tensor:
        parts = []
        for i in range(0, len(texts), 32):
            st = m.forward(texts[i : i + 32], truncate=True)
            parts.append(torch.nn.functional.normalize(pool(st.hidden_states, st.attention_mask), dim=-1))
        return torch.cat(parts)

    ref = embed(ms["fp32"])
    times: dict[str, list[float]] = {p: [] for p in ms}
    cosine: dict[str, float] = {}
    for _ in range(args.runs):
        for p, m in ms.items():
            t = time.perf_counter()
            v = embed(m)
            times[p].append(time.perf_counter() - t)
            cosine[p] = float((v * ref).sum(1).min())
    base = statistics.median(times["fp32"])
    speed = {p: {"seconds": round(statistics.median(t), 2), "speedup_vs_fp32": round(base / statistics.median(t), 2),
                 "min_cosine_to_fp32": round(cosine[p], 5)} for p, t in times.items()}
    quality = {}
    for s in args.sets.split(","):
        split = SETS[s]
        quality[f"{s} {split}"] = {p: round(pooling_sweep.run_retrieval(m, {"mean": pool}, s, split)["mean"], 4)
                                   for p, m in ms.items()}
    out = {"command": command(), "speed": speed, "ndcg@10": quality}
    if args.json:
        print_json(out)
        return
    print(markdown_table(
        ["precision", "forward s", "speed-up vs fp32", "lowest cosine to fp32", *quality],
        [[p, r["seconds"], r["speedup_vs_fp32"], r["min_cosine_to_fp32"], *(f"{quality[s][p]:.4f}" for s in quality)]
         for p, r in speed.items()]))


if __name__ == "__main__":
    main()
