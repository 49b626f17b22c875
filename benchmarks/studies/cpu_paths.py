"""Every CPU path of the forward pass in one run: speed against torch fp32, and dense nDCG@10 on visible splits.

    flock /work/bench.lock .venv/bin/python benchmarks/studies/cpu_paths.py [--sets trecqa-dev] [--runs 3]
        [--passages 128] [--calibration 128] [--json]

Paths: torch fp32 (the baseline), torch bf16 (autocast, Linear weights cast once), the fused ONNX fp32 graph on
ONNX Runtime (encode/onnx_encoder.py), ONNX Runtime int8 static quantisation of that graph (QDQ, per channel,
calibrated on --calibration SciFact passages not used for timing), OpenVINO on the same graph in fp32 and with
its bf16 inference hint (AMX where the CPU has it), and OpenVINO with int8 weight compression (NNCF), where
those packages are installed. Speed: --passages SciFact abstracts (128) cut to 126 word pieces, batches of 32,
every path timed in turn within each run (median of --runs), ratio of its passages/s to torch fp32's; the lowest
cosine of any passage's vector to torch fp32's. Quality: dense nDCG@10 (mean pooling) on each split
(benchmarks/studies/pooling_sweep.py's retrieval scoring). A path is adoptable when nDCG@10 stays within 0.005 of fp32
on every split measured.

A study, kept for the figure it backs: docs/performance.md, "Every CPU path in one run".
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _path  # noqa: F401  (benchmarks/ on sys.path)
import numpy as np
import pooling_sweep
import torch
from _common import SETS, command, machine, machine_line, markdown_table, print_json
from encode import passages

from searchapp.encode import onnx_encoder
from searchapp.encode.pooling import get_pooling
from searchapp.encode.tokenizer import load_tokenizer
from searchapp.encode.transformer import LayerStates, TransformerModel

MODEL = "all-MiniLM-L6-v2"


class GraphPath:
    """A forward pass through an exported graph (ONNX Runtime or OpenVINO) with ``TransformerModel.forward``'s
    inputs and output: the last layer's states ``(1, B, T, d)`` float32 and the mask."""

    def __init__(self, run: Any, names: list[str]) -> None:
        self.tokenizer = load_tokenizer(MODEL)
        self._torch = TransformerModel(MODEL)  # tokenisation and padding only
        self._run, self._names = run, names

    def forward(self, texts: list[str], truncate: bool = False, all_layers: bool = False) -> LayerStates:
        ids, mask = self._torch.inputs(texts, truncate)
        feed = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "token_type_ids": np.zeros_like(ids)}
        states = self._run({n: feed[n] for n in self._names})
        return LayerStates(torch.from_numpy(np.asarray(states, dtype=np.float32)).unsqueeze(0), mask)


def onnx_path(graph: Path, threads: int) -> GraphPath:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    session = ort.InferenceSession(str(graph), opts, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return GraphPath(lambda feed: session.run(None, feed)[0], names)


def int8_static(graph: Path, calibration: list[str], out: Path) -> Path:
    """The graph quantised to int8 (QDQ, per channel), its activation ranges calibrated on ``calibration``."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    model = TransformerModel(MODEL)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([calibration[i : i + 16] for i in range(0, len(calibration), 16)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            texts = next(self.batches, None)
            if texts is None:
                return None
            ids, mask = model.inputs(texts, truncate=True)
            feed = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
            if model.token_types:
                feed["token_type_ids"] = np.zeros_like(feed["input_ids"])
            return feed

    quantize_static(str(graph), str(out), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    return out


def openvino_paths(threads: int) -> dict[str, GraphPath]:
    """OpenVINO's paths, the model converted from torch (``ov.convert_model``; the graph ONNX Runtime fused holds
    its own operators, which NNCF cannot read)."""
    try:
        import openvino as ov
    except ImportError:
        return {}
    module, names, sample = TransformerModel(MODEL, attention="eager").last_layer()
    with torch.inference_mode():
        converted = ov.convert_model(module, example_input=sample)
    core = ov.Core()
    variants: dict[str, tuple[Any, str]] = {"OpenVINO fp32": (converted, "f32"),
                                            "OpenVINO bf16 hint": (converted, "bf16")}
    try:
        import nncf

        compressed = nncf.compress_weights(converted.clone(), mode=nncf.CompressWeightsMode.INT8_ASYM)
        variants["OpenVINO int8 weights (NNCF), bf16 hint"] = (compressed, "bf16")
    except Exception as exc:  # noqa: BLE001 - reported, the other paths still measured
        print(f"# NNCF weight compression: {exc}", file=sys.stderr)  # stdout is the JSON
    out = {}
    for name, (m, hint) in variants.items():
        compiled = core.compile_model(m, "CPU", {"INFERENCE_PRECISION_HINT": hint, "INFERENCE_NUM_THREADS": threads,
                                                 "PERFORMANCE_HINT": "LATENCY"})
        request = compiled.create_infer_request()
        # Inputs by position: the converted model names them after the traced arguments.
        out[name] = GraphPath(lambda feed, r=request: r.infer([feed[n] for n in names])[0].copy(), names)
    return out


def embed(m: Any, texts: list[str]) -> torch.Tensor:
    """Mean-pooled unit vectors of ``texts`` through path ``m`` in batches of 32: float32 ``(n, d)``."""
    pool = get_pooling("mean")
    parts = []
    for i in range(0, len(texts), 32):
        st = m.forward(texts[i : i + 32], truncate=True, all_layers=False)
        parts.append(torch.nn.functional.normalize(pool(st.hidden_states, st.attention_mask), dim=-1))
    return torch.cat(parts)


def time_paths(paths: dict[str, Any], texts: list[str], runs: int) -> tuple[dict[str, list[float]],
                                                                             dict[str, torch.Tensor]]:
    """Each path's seconds over ``texts`` in each of ``runs`` runs (every path in turn within a run, after a
    warm-up), and each passage's cosine to the ``"torch fp32"`` path's vector, float32 ``(n,)``."""
    ref = embed(paths["torch fp32"], texts)
    for m in paths.values():
        embed(m, texts)  # warm-up: kernels compiled, weights laid out
    times: dict[str, list[float]] = {p: [] for p in paths}
    cosines: dict[str, torch.Tensor] = {}
    for _ in range(runs):
        for p, m in paths.items():
            t = time.perf_counter()
            v = embed(m, texts)
            times[p].append(time.perf_counter() - t)
            cosines[p] = (v * ref).sum(1)
    return times, cosines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="trecqa-dev", help="visible splits for nDCG@10, comma-separated")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--passages", type=int, default=128, help="SciFact abstracts timed")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--calibration", type=int, default=128)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    record = machine(threads=args.threads)
    texts = passages(args.passages, 126)
    calibration = passages(args.passages + args.calibration, 126)[args.passages:]
    graph = onnx_encoder.export(MODEL)
    with tempfile.TemporaryDirectory() as tmp:
        paths: dict[str, Any] = {f"torch {p}": TransformerModel(MODEL, threads=args.threads, precision=p)
                                 for p in ("fp32", "bf16")}
        paths["ONNX Runtime fp32 (fused)"] = onnx_path(graph, args.threads)
        try:
            paths["ONNX Runtime int8 static"] = onnx_path(int8_static(graph, calibration, Path(tmp) / "int8.onnx"),
                                                          args.threads)
        except Exception as exc:  # noqa: BLE001 - reported, the other paths still measured
            print(f"# ONNX Runtime int8 static: {exc}", file=sys.stderr)
        paths.update(openvino_paths(args.threads))
        times, cosines = time_paths(paths, texts, args.runs)
        cosine = {p: float(c.min()) for p, c in cosines.items()}
        base = statistics.median(times["torch fp32"])
        rows: dict[str, dict[str, Any]] = {
            p: {"seconds": round(statistics.median(t), 2),
                "speedup_vs_torch_fp32": round(base / statistics.median(t), 2),
                "min_cosine_to_fp32": round(cosine[p], 5)} for p, t in times.items()}
        add_ndcg(rows, paths, args.sets)
    report(args.json, record, rows, {"forward s": "seconds", "speed-up vs torch fp32": "speedup_vs_torch_fp32",
                                     "lowest cosine to fp32": "min_cosine_to_fp32"})


def add_ndcg(rows: dict[str, dict[str, Any]], paths: dict[str, Any], sets: str, skip: tuple[str, ...] = ()) -> None:
    """Each path's dense nDCG@10 (mean pooling) on each of ``sets`` (comma-separated names), into its row."""
    pool = get_pooling("mean")
    for s in filter(None, sets.split(",")):
        for p, m in paths.items():
            if p in skip:
                continue
            print(f"# nDCG@10 {s}: {p}", file=sys.stderr)
            rows[p][f"ndcg@10 {s} {SETS[s]}"] = round(
                pooling_sweep.run_retrieval(m, {"mean": pool}, s, SETS[s])["mean"], 4)


def report(as_json: bool, record: dict[str, Any], rows: dict[str, dict[str, Any]], columns: dict[str, str]) -> None:
    """The rows as JSON, or as a markdown table of ``columns`` (heading: row key) and the nDCG columns."""
    if as_json:
        print_json({"command": command(), "machine": record, "rows": rows})
        return
    print(machine_line(record))
    ndcg = sorted({k for r in rows.values() for k in r if k.startswith("ndcg")})
    print(markdown_table(["path", *columns, *ndcg],
                         [[p, *(r[k] for k in columns.values()), *(r.get(c, "") for c in ndcg)]
                          for p, r in rows.items()]))


if __name__ == "__main__":
    main()
