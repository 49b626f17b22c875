"""Dynamic int8 quantisation of the fused ONNX graph, candidate by candidate: speed against the fp32 graph and
torch fp32, the vectors' distance to fp32, and dense nDCG@10 on visible splits.

    flock /tmp/bench.lock .venv/bin/python benchmarks/studies/int8_dynamic.py [--sets trecqa-dev] [--runs 3]
        [--passages 128] [--only NAME ...] [--json]

Every candidate is ``onnxruntime.quantization.quantize_dynamic`` over the fused fp32 graph that queries and fp32
ingests run (encode/onnx_encoder.py): weights int8, activations quantised per batch at run time, the embeddings,
layer norms, softmax and pooling in fp32 whatever the candidate. They differ in which operators are quantised
(every MatMul and the fused Attention's QKV projection, or the MatMuls only), per-tensor or per-channel weight
scales, and 7-bit weights (``reduce_range``: on a CPU without VNNI ONNX Runtime multiplies u8 by s8 with pairwise
16-bit sums that saturate at full range). Speed: --passages SciFact abstracts (128) cut to 126 word pieces,
batches of 32, every path timed in turn within each run after a warm-up (median of --runs). Quality: the lowest and
mean cosine of the vectors to torch fp32's, and dense nDCG@10 (mean pooling, questions and passages through the
same path) on each of --sets.

A study, kept for the figure it backs: docs/performance.md, "Int8 on CPUs without bf16".
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from typing import Any

import _path  # noqa: F401  (benchmarks/ on sys.path)
import onnx
import torch
from _common import machine
from cpu_paths import add_ndcg, onnx_path, report, time_paths
from encode import passages

from searchapp.encode import onnx_encoder
from searchapp.encode.transformer import TransformerModel

MODEL = "all-MiniLM-L6-v2"

# name -> (operator kinds quantised, per channel, 7-bit weights)
CANDIDATES: dict[str, tuple[tuple[str, ...], bool, bool]] = {
    "all, per tensor": (("MatMul", "Attention"), False, False),
    "all, per channel": (("MatMul", "Attention"), True, False),
    "all, per channel, 7-bit": (("MatMul", "Attention"), True, True),
    "MatMul, per channel, 7-bit": (("MatMul",), True, True),
}


def quantised(graph: Path, name: str, out: Path) -> Path:
    """``graph`` quantised as candidate ``name`` describes, written to ``out``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    ops, per_channel, seven_bit = CANDIDATES[name]
    quantize_dynamic(str(graph), str(out), op_types_to_quantize=list(ops), per_channel=per_channel,
                     reduce_range=seven_bit, weight_type=QuantType.QInt8,
                     # the fused graph's com.microsoft operators defeat shape inference: their outputs are float
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="trecqa-dev", help="visible splits for nDCG@10, comma-separated ('' for none)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--passages", type=int, default=128, help="SciFact abstracts timed")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", nargs="*", default=[], choices=tuple(CANDIDATES),
                    help="the candidates to run, each name one argument (default: all)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    record = machine(threads=args.threads)
    texts = passages(args.passages, 126)
    graph = onnx_encoder.export(MODEL)
    names = [n for n in CANDIDATES if not args.only or n in args.only]
    with tempfile.TemporaryDirectory() as tmp:
        paths: dict[str, Any] = {"torch fp32": TransformerModel(MODEL, threads=args.threads, precision="fp32"),
                                 "ONNX Runtime fp32 (fused)": onnx_path(graph, args.threads)}
        for i, name in enumerate(names):
            paths[f"int8 dynamic: {name}"] = onnx_path(quantised(graph, name, Path(tmp) / f"q{i}.onnx"), args.threads)
        times, cosines = time_paths(paths, texts, args.runs)
        base = statistics.median(times["torch fp32"])
        onnx_base = statistics.median(times["ONNX Runtime fp32 (fused)"])
        rows: dict[str, dict[str, Any]] = {
            p: {"seconds": round(statistics.median(t), 2),
                "speedup_vs_torch_fp32": round(base / statistics.median(t), 2),
                "speedup_vs_onnx_fp32": round(onnx_base / statistics.median(t), 2),
                "min_cosine_to_fp32": round(float(cosines[p].min()), 5),
                "mean_cosine_to_fp32": round(float(cosines[p].mean()), 5)} for p, t in times.items()}
        add_ndcg(rows, paths, args.sets, skip=("torch fp32",))  # the ONNX fp32 graph's figure is fp32's
    report(args.json, record, rows, {"forward s": "seconds", "vs torch fp32": "speedup_vs_torch_fp32",
                                     "vs ONNX fp32": "speedup_vs_onnx_fp32", "lowest cosine": "min_cosine_to_fp32",
                                     "mean cosine": "mean_cosine_to_fp32"})


if __name__ == "__main__":
    main()
