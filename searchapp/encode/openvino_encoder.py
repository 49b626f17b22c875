"""The bf16 ingest path on CPUs with AMX or AVX-512 bf16: the model's last layer compiled by OpenVINO with its bf16
inference hint (an optional extra: ``pip install 'searchapp[openvino]'``). Where it is installed, it embeds the
passages of every bf16 index, which is what ``auto`` gives on such a CPU (``SEARCHAPP_OPENVINO=0``: torch instead).

OpenVINO's bf16 graph is the fastest CPU path where the CPU has bf16 instructions, faster than torch fp32 and
torch's own bf16 autocast, with the vectors of torch bf16 (docs/performance.md, "Every CPU path in one run", which
gives the figures and the command). The model is converted once from the local weights by a
process that has torch anyway (an ingest) into ``<cache>/openvino/`` under a key of the model files' contents and
the converting tools' versions (as the ONNX graph is), then read without torch. Only last-layer poolings (mean,
CLS, max) run here.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import numpy as np

from searchapp.encode.cached_file import made
from searchapp.encode.graph_cache import derived_path, owner
from searchapp.encode.onnx_encoder import GraphEncoder, can_run
from searchapp.errors import ModelLoadError, first_line

# 0 to ingest bf16 indexes with torch even where OpenVINO is installed. On by default: its dense nDCG@10 is within
# 0.005 of fp32 on every visible split (the bar for a default; docs/performance.md).
ENV_SWITCH = "SEARCHAPP_OPENVINO"
DEFAULT = "1"
_BATCH = 32
_RECIPE = "eager-last-layer-1"
# What writes the converted model: torch's tracer and OpenVINO's converter.
CONVERT_TOOLS = ("torch", "openvino")


def enabled() -> bool:
    """Whether the OpenVINO path may be used in this process (``SEARCHAPP_OPENVINO=1`` / ``0``)."""
    return os.environ.get(ENV_SWITCH, DEFAULT) != "0"


def installed() -> bool:
    """Whether the ``openvino`` package can be imported here (nothing is imported)."""
    return importlib.util.find_spec("openvino") is not None


def available(pooling: str, params: dict[str, Any]) -> bool:
    """Whether this pooling can run through OpenVINO here (a last-layer pooling, OpenVINO installed)."""
    return can_run(pooling, params) and installed()


def ir_path(model: str) -> Path:
    """Where the converted model lives: ``<cache>/openvino/``, named by the model files' contents and the versions
    of torch and OpenVINO (encode/graph_cache.py), as the ONNX graph is."""
    return derived_path(model, "openvino", _RECIPE, CONVERT_TOOLS, ".xml")


def convert(model: str) -> Path:
    """The path of ``model``'s last layer in OpenVINO's IR (``.xml`` + ``.bin``), converted now unless a whole one
    is cached (encode/cached_file.py: both files checked, made again when broken, by one process at a time);
    needs torch to convert. ``ModelLoadError`` naming the file and the reason if the conversion fails."""
    return made(ir_path(model), lambda out: _convert_to(model, out), owner(model), companions=(".bin",))


def _convert_to(model: str, out: Path) -> None:
    """Convert ``model``'s last layer into ``out`` and the ``.bin`` beside it."""
    try:
        import warnings

        import openvino as ov
        import torch

        from searchapp.encode.transformer import TransformerModel

        module, _, sample = TransformerModel(model, precision="fp32", attention="eager").last_layer()
        with warnings.catch_warnings(), torch.inference_mode():
            warnings.simplefilter("ignore")  # the tracer's notes
            converted = ov.convert_model(module, example_input=sample)
        # Full precision on disk (the bf16 hint decides at compile time); the inputs in this order.
        ov.save_model(converted, str(out), compress_to_fp16=False)
    except Exception as exc:  # the converter raises many kinds; a failed conversion must not break ingest
        raise ModelLoadError(f"{model}: cannot convert the model for OpenVINO: {first_line(exc)}") from exc


class OpenVinoEncoder(GraphEncoder):
    """Embeds texts with the model compiled by OpenVINO for this CPU under its bf16 inference hint: float32 unit
    vectors (the states come back in float32), like ``TorchEncoder`` in bf16."""

    precision = "bf16"

    def __init__(self, model: str, pooling: str = "mean", threads: int | None = None,
                 path: Path | None = None, batch_size: int = _BATCH) -> None:
        import openvino as ov

        source = path or ir_path(model)
        core = ov.Core()
        config: dict[str, Any] = {"INFERENCE_PRECISION_HINT": "bf16", "PERFORMANCE_HINT": "LATENCY"}
        if threads:
            config["INFERENCE_NUM_THREADS"] = threads
        try:
            compiled = core.compile_model(core.read_model(str(source)), "CPU", config)
        except Exception as exc:  # OpenVINO raises RuntimeError for unreadable or uncompilable models
            raise ModelLoadError(f"{source}: cannot compile the model with OpenVINO: {exc}") from exc
        # Inputs by position, in the order they were converted in (the IR names them after traced arguments).
        self._inputs = ["input_ids", "attention_mask", "token_type_ids"][: len(compiled.inputs)]
        self._request = compiled.create_infer_request()
        super().__init__(model, pooling, batch_size, int(compiled.outputs[0].get_partial_shape()[-1].get_length()))

    def _states(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        return np.asarray(self._request.infer([feed[n] for n in self._inputs])[0], dtype=np.float32).copy()


def load(model: str, pooling: str, threads: int | None, batch_size: int = _BATCH) -> OpenVinoEncoder | None:
    """An ``OpenVinoEncoder`` (the model converted now if missing or broken); ``ModelLoadError`` naming the file and
    the reason where it cannot be converted or compiled here: the caller then tries the next backend (torch)."""
    try:
        return OpenVinoEncoder(model, pooling, threads, convert(model), batch_size)
    except OSError as exc:
        raise ModelLoadError(f"{model}: cannot load the OpenVINO model: {first_line(exc)}") from exc
