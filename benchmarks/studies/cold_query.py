"""A one-shot `searchapp query` in a fresh process, and a warm question's embedding, with and without ONNX.

    .venv/bin/python benchmarks/studies/cold_query.py [--runs 7] [--json]

Builds an index of the bundled sample (data/sample) in a temporary folder (which also exports the model's ONNX
graph into the cache, as any ingest does), then times `searchapp query QUESTION` as a new process, hybrid and
lexical, with the ONNX query path and with it switched off (SEARCHAPP_ONNX=0: torch), the variants interleaved
run by run so that load on the machine hits them alike. Warm: the median time to embed one short question in a
process that already holds the model, ONNX Runtime against torch (fp32 and this machine's auto precision).
Each figure is the median over --runs (cold) or 200 calls (warm).

A study, kept for the figure it backs: docs/performance.md, "A one-shot query: about a second".
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _path  # noqa: F401  (benchmarks/ on sys.path)
from _common import ROOT, call_ms, command, machine, markdown_table, print_json

QUESTION = "how do I rotate the signing keys?"
VARIANTS = {
    "hybrid, onnx": (["--mode", "hybrid"], "1"),
    "hybrid, torch": (["--mode", "hybrid"], "0"),
    "dense, onnx": (["--mode", "dense"], "1"),
    "lexical": (["--mode", "lexical"], "1"),
}


def cli() -> list[str]:
    exe = Path(sys.executable).with_name("searchapp")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "searchapp"]


def cold(index: Path, runs: int) -> dict[str, dict[str, float]]:
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(runs):
        for name, (args, onnx) in VARIANTS.items():
            env = {**os.environ, "SEARCHAPP_ONNX": onnx}
            t = time.perf_counter()
            subprocess.run([*cli(), "query", QUESTION, "--index", str(index), "-k", "5", *args], env=env,
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - t)
    return {name: {"median_s": round(statistics.median(v), 3), "min_s": round(min(v), 3),
                   "runs": [round(x, 3) for x in v]} for name, v in times.items()}


def warm(calls: int = 200) -> dict[str, float]:
    from searchapp.encode.encoder import TorchEncoder
    from searchapp.encode.onnx_encoder import OnnxEncoder

    encoders = {"onnx": OnnxEncoder("all-MiniLM-L6-v2", threads=2),
                "torch fp32": TorchEncoder(precision="fp32", threads=2),
                "torch auto": TorchEncoder(precision="auto", threads=2)}
    out = {}
    for name, enc in encoders.items():
        ms = call_ms(lambda q, enc=enc: enc.encode([q], truncate=True), [QUESTION] * calls, warmup=10)
        out[name] = round(statistics.median(ms), 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "ix"
        subprocess.run([*cli(), "ingest", str(ROOT / "data" / "sample"), "--index", str(index)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        result = {"machine": machine(), "command": command(), "cold": cold(index, args.runs), "warm_ms": warm()}
    c = result["cold"]
    result["cold_ratio_torch_over_onnx"] = round(c["hybrid, torch"]["median_s"] / c["hybrid, onnx"]["median_s"], 2)
    if args.json:
        print_json(result)
        return
    print(markdown_table(["cold `searchapp query`", "median s", "min s"],
                         [[name, r["median_s"], r["min_s"]] for name, r in c.items()]))
    print()
    print(markdown_table(["warm: one short question", "median ms"], list(result["warm_ms"].items())))


if __name__ == "__main__":
    main()
