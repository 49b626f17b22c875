"""An encoder that starts fast: the model's graph exported once to ONNX from the local weights, run with ONNX
Runtime, without importing torch. It embeds queries, and the passages of fp32 indexes (``Index``).

Importing torch and loading the model through transformers costs seconds before a one-shot ``searchapp query``
can embed its question; ONNX Runtime loads the same weights in a fraction of that and embeds a short question
in a few milliseconds (docs/performance.md). The graph is exported from the bundled (or local) weights, never
downloaded: on the first ingest or query that needs it, by a process that has torch anyway, into
``<cache>/onnx/`` under a key of the model files' contents and the exporting tools' versions
(encode/graph_cache.py), so a changed model is exported again and installs of the same one share the graph.

The graph is exported with the model's plain ("eager") attention and then fused by ONNX Runtime's transformer
optimizer (an Attention, two SkipLayerNormalization and a BiasGelu node a layer): the exporter's scaled-dot-product
form matches none of the optimizer's patterns, and the fused graph embeds a short question faster than the plain
one (docs/performance.md, "A one-shot query: about a second"). A model the optimizer cannot fuse keeps the plain
graph.

Only poolings of the last layer (``ONNX_POOLINGS``) run here, in numpy, in float32; any other pooling (fused
layers, SBERT-WK) keeps the torch encoder. Vectors equal the torch fp32 path's to a cosine of 0.9999 or better
(tests/integration/test_onnx_encoder.py).
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np

from searchapp.encode.cached_file import existing, made
from searchapp.encode.catalog import canonical_name, model_max_tokens
from searchapp.encode.graph_cache import derived_path, owner
from searchapp.encode.tokenizer import SPECIAL_TOKENS, load_tokenizer
from searchapp.errors import ModelLoadError, first_line

ONNX_POOLINGS = ("mean", "cls", "max")
# Set to 0 to embed queries and fp32 ingests with torch even where an exported graph exists.
ENV_SWITCH = "SEARCHAPP_ONNX"
_BATCH = 32
# Part of the graph's file name: a change to how graphs are exported or fused makes every cached one stale.
_RECIPE = "eager-fused-1"
OPSET = 17
# What writes the graph: torch's exporter, onnx, and ONNX Runtime's optimizer (the fusions).
EXPORT_TOOLS = ("torch", "onnx", "onnxruntime")


def enabled() -> bool:
    """Whether the ONNX path may be used in this process (``SEARCHAPP_ONNX=0`` turns it off)."""
    return os.environ.get(ENV_SWITCH, "1") != "0"


def runtime_available() -> bool:
    """Whether ONNX Runtime can be imported here."""
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None


def graph_path(model: str) -> Path:
    """Where the exported graph of ``model`` lives: ``<cache>/onnx/``, named by the model files' contents, the
    export recipe and the versions of torch, onnx and ONNX Runtime (encode/graph_cache.py), so changed weights or
    tools export again and two installs of the same ones share the file."""
    return derived_path(model, "onnx", f"{_RECIPE}:opset{OPSET}", EXPORT_TOOLS, ".onnx")


def export(model: str) -> Path:
    """The path of ``model``'s exported graph (inputs: ids, mask[, token types]; output: the last layer's token
    states ``(B, T, d)``), exported now unless a whole one is cached (encode/cached_file.py: checked, made again
    when broken, by one process at a time). Needs torch and the ``onnx`` package to export; ``ModelLoadError``
    naming the file and the reason if the export fails."""
    return made(graph_path(model), lambda out: _export_to(model, out), owner(model))


def _export_to(model: str, out: Path) -> None:
    """Export and fuse ``model``'s graph at ``out`` (in a folder of its own: the exporter's files stay there)."""
    try:
        import warnings

        import torch

        from searchapp.encode.transformer import TransformerModel

        tm = TransformerModel(model, precision="fp32", attention="eager")
        module, names, args = tm.last_layer()
        with warnings.catch_warnings(), torch.inference_mode():
            warnings.simplefilter("ignore")  # the exporter's notes on operators it rewrites
            torch.onnx.export(
                module, args, str(out), dynamo=False, input_names=names,
                output_names=["last_hidden_state"], opset_version=OPSET,
                dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
            )
        _fuse(out, heads=int(tm.model.config.num_attention_heads), hidden=tm.dimension)
    except Exception as exc:  # the exporter raises many kinds; a failed export must not break ingest
        raise ModelLoadError(f"{model}: cannot export the model to ONNX: {first_line(exc)}") from exc


# The int8 graph: ONNX Runtime's dynamic quantisation of the fused fp32 graph (weights int8 per output channel,
# activations quantised at run time with one scale per run of the graph, so each text is run on its own:
# ``GraphEncoder.texts_per_run``), the embeddings, layer norms, softmax and pooling left in fp32.
# Which operators, per-channel scales and 7-bit weights were chosen by measurement on a CPU without VNNI, where
# full-range u8 x s8 products saturate (docs/performance.md, "Int8 on CPUs without bf16").
INT8_OPS = ("MatMul", "Attention")
INT8_PER_CHANNEL = True
INT8_REDUCE_RANGE = True
_INT8_RECIPE = f"dynamic:{'+'.join(INT8_OPS)}:pc{int(INT8_PER_CHANNEL)}:rr{int(INT8_REDUCE_RANGE)}"


def int8_graph_path(model: str) -> Path:
    """Where the int8 graph of ``model`` lives: ``<cache>/onnx-int8/``, keyed like the fp32 graph it is made from
    and by the quantisation recipe."""
    return derived_path(model, "onnx-int8", f"{_RECIPE}:opset{OPSET}:{_INT8_RECIPE}", EXPORT_TOOLS, ".onnx")


def export_int8(model: str) -> Path:
    """The path of ``model``'s int8 graph, quantised now from the fp32 graph (exported first if need be) unless a
    whole one is cached; ``ModelLoadError`` naming the file and the reason if that fails."""
    return made(int8_graph_path(model), lambda out: _quantise_to(model, out), owner(model))


def _quantise_to(model: str, out: Path) -> None:
    """Quantise ``model``'s fp32 graph into ``out``. The quantiser writes ``<input>-inferred.onnx`` beside its
    input, a fixed name: it is given a link to the shared fp32 graph inside ``out``'s private folder, so that
    makers in two processes (or a leftover of either) never meet there."""
    source = export(model)
    private = out.with_name(source.name)
    try:
        os.link(source, private)
    except OSError:  # another file system, or links refused: a copy then
        shutil.copyfile(source, private)
    try:
        import logging

        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # The quantiser notes each node on the root logger: quiet while it runs, and only then (left at ERROR,
        # the root logger silenced every warning of the process after it, the cache's own included).
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)
        try:
            quantize_dynamic(str(private), str(out), op_types_to_quantize=list(INT8_OPS),
                             per_channel=INT8_PER_CHANNEL, reduce_range=INT8_REDUCE_RANGE,
                             weight_type=QuantType.QInt8,
                             # the fused graph's com.microsoft operators defeat shape inference: their outputs
                             # are float
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        finally:
            root.setLevel(level)
    except Exception as exc:  # the quantiser raises many kinds; the fp32 graph still serves
        raise ModelLoadError(f"{model}: cannot quantise the ONNX graph to int8: {first_line(exc)}") from exc
    finally:
        private.unlink(missing_ok=True)


def _fuse(path: Path, heads: int, hidden: int) -> None:
    """Rewrite the graph at ``path`` with ONNX Runtime's transformer fusions where they apply; left as it is
    where the optimizer fails (an architecture it does not know)."""
    try:
        import logging

        from onnxruntime.transformers.optimizer import optimize_model

        logging.getLogger("onnxruntime.transformers").setLevel(logging.ERROR)  # its notes on each fusion pass
        fused = optimize_model(str(path), model_type="bert", num_heads=heads, hidden_size=hidden)
        fused.save_model_to_file(str(path))
    except Exception:  # the optimizer raises many kinds; the plain graph still serves
        pass


def _pool(states: np.ndarray, mask: np.ndarray, pooling: str) -> np.ndarray:
    """``states`` float32 ``(B, T, d)``, ``mask`` int64 ``(B, T)`` -> float32 ``(B, d)`` (as encode/pooling.py)."""
    if pooling == "cls":
        return states[:, 0, :]
    m = mask[:, :, None].astype(np.float32)
    if pooling == "max":
        return np.where(m > 0, states, -np.inf).max(axis=1)
    return (states * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1.0)


class GraphEncoder:
    """Embeds texts with a compiled graph of the model's last layer (a runtime's, :meth:`_states`): float32 unit
    vectors, like ``TorchEncoder`` with the same pooling; tokenisation, length-sorted batches and pooling here."""

    precision = "fp32"
    # Texts in one run of the graph at most (``None``: ``batch_size``). A graph whose numbers depend on the other
    # rows of its run (dynamic quantisation: one activation scale per run) runs each text alone, so that a text's
    # vector is the same whatever it is embedded beside and however it is padded.
    texts_per_run: int | None = None

    def __init__(self, model: str, pooling: str, batch_size: int, dimension: int) -> None:
        if pooling not in ONNX_POOLINGS:
            raise ModelLoadError(f"pooling '{pooling}' is not run through a graph (only {', '.join(ONNX_POOLINGS)})")
        self.model_name = canonical_name(model)
        self.pooling = pooling
        self.batch_size = batch_size
        self.tokenizer = load_tokenizer(self.model_name)
        self.max_length = model_max_tokens(self.model_name)
        self.dimension = dimension
        self._lock = threading.Lock()  # the shared tokenizer is not safe to use from two threads at once

    def _states(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        """The last layer's states, float32 ``(B, T, d)``, for int64 ``input_ids``, ``attention_mask`` and
        ``token_type_ids`` ``(B, T)`` (a graph takes those it has)."""
        raise NotImplementedError

    @property
    def max_text_tokens(self) -> int:
        """Word pieces a text may hold, special tokens excluded."""
        return self.max_length - SPECIAL_TOKENS

    @property
    def max_tokens(self) -> int:
        """Tokens the model accepts in one input, special tokens included."""
        return self.max_length

    def token_counts(self, texts: list[str]) -> list[int]:
        """Tokens the model sees for each text, special tokens included, before any truncation."""
        with self._lock:
            return [len(e.ids) for e in self.tokenizer.encode_batch(texts, add_special_tokens=True)]

    def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray:
        """Vectors for ``texts``: float32 ``(n, d)``, unit rows. Over-long texts are cut with ``truncate``, else
        refused like ``TorchEncoder.encode``."""
        from searchapp.errors import ConfigError

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            encodings = self.tokenizer.encode_batch(texts)
        longest = max(len(e.ids) for e in encodings)
        if longest > self.max_length and not truncate:
            raise ConfigError(f"text of {longest} tokens exceeds the model limit of {self.max_length}; split it first")
        order = np.argsort([len(e.ids) for e in encodings], kind="stable")
        step = self.texts_per_run or self.batch_size
        for i in range(0, len(texts), step):
            idx = order[i : i + step]
            # Cut as the torch path cuts (``Encoding.truncate``: the first max_length pieces).
            rows = [encodings[j].ids[: self.max_length] for j in idx]
            width = max(len(r) for r in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for k, r in enumerate(rows):
                ids[k, : len(r)] = r
                mask[k, : len(r)] = 1
            states = self._states({"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
            vecs = _pool(states, mask, self.pooling)
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            out[idx] = vecs / np.where(norms > 0, norms, 1.0)
        return out


class OnnxEncoder(GraphEncoder):
    """Embeds texts with the exported graph on ONNX Runtime, in fp32 (or, ``precision="int8"``, with the int8
    graph quantised from it).

    Also what an fp32 index ingests with (``Index``): a whole ingest through ONNX Runtime's fused graph outruns
    torch's bare fp32 forward pass on this project's CPU, in less memory (docs/performance.md); and the int8
    graph what an int8 index ingests with.
    """

    def __init__(self, model: str, pooling: str = "mean", threads: int | None = None,
                 path: Path | None = None, batch_size: int = _BATCH, precision: str = "fp32") -> None:
        if pooling not in ONNX_POOLINGS:
            raise ModelLoadError(f"pooling '{pooling}' is not run through ONNX (only {', '.join(ONNX_POOLINGS)})")
        import onnxruntime as ort

        self.precision = precision
        if precision == "int8":
            # One activation scale per run: alone, a text's vector depends on its own words only, not on its batch.
            # No slower than batches: the products run over a text's tokens either way, and nothing is padded
            # (docs/performance.md, "Int8 on CPUs without bf16").
            self.texts_per_run = 1
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        source = path or (int8_graph_path(model) if precision == "int8" else graph_path(model))
        try:
            self._session = ort.InferenceSession(str(source), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types for unreadable graphs
            raise ModelLoadError(f"{source}: cannot load the ONNX graph: {exc}") from exc
        self._inputs = [i.name for i in self._session.get_inputs()]
        super().__init__(model, pooling, batch_size, int(self._session.get_outputs()[0].shape[-1]))

    def _states(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        return self._session.run(None, {n: feed[n] for n in self._inputs})[0]  # type: ignore[no-any-return]


def can_run(pooling: str, params: dict[str, Any]) -> bool:
    """Whether this pooling can run through ONNX here (a last-layer pooling without parameters, ONNX Runtime
    importable), whatever ``SEARCHAPP_ONNX`` says."""
    return pooling in ONNX_POOLINGS and not params and runtime_available()


def serves(pooling: str, params: dict[str, Any]) -> bool:
    """Whether queries of an index with this pooling may go through ONNX in this process."""
    return can_run(pooling, params) and enabled()


def prepare_graph(model: str, pooling: str, params: dict[str, Any]) -> None:
    """Export the graph now if queries of this index would use it and it is missing; a failed export only means
    queries keep using torch (it is tried again next time)."""
    import importlib.util

    if serves(pooling, params) and importlib.util.find_spec("onnx") is not None:
        try:
            export(model)
        except (ModelLoadError, OSError):
            pass


def query_encoder(model: str, pooling: str, params: dict[str, Any], threads: int | None,
                  export_missing: bool = True, batch_size: int = _BATCH) -> OnnxEncoder | None:
    """The fast query encoder for this model and pooling, or ``None`` where it cannot serve (another pooling,
    pooling parameters, ONNX Runtime missing, switched off, or no graph and ``export_missing`` false or the
    export failing): the caller then embeds with torch."""
    if not serves(pooling, params):
        return None
    try:
        return load(model, pooling, threads, export_missing, batch_size)
    except ModelLoadError:
        return None


def load(model: str, pooling: str, threads: int | None, export_missing: bool = True,
         batch_size: int = _BATCH, precision: str = "fp32") -> OnnxEncoder | None:
    """An ``OnnxEncoder`` on the model's graph, fp32 or ``int8`` (exported, or quantised, now if missing or
    broken and ``export_missing``), or ``None`` where there is no whole graph and ``export_missing`` is false.
    ``ModelLoadError`` naming the file and the reason where the graph cannot be made or loaded: the caller
    decides whether another backend serves instead. Whether this pooling and process may use ONNX is the
    caller's question (:func:`serves`; ``encode/spec.py``)."""
    int8 = precision == "int8"
    try:
        if export_missing:
            path: Path | None = export_int8(model) if int8 else export(model)
        else:
            path = existing(int8_graph_path(model) if int8 else graph_path(model))
        if path is None:
            return None
        return OnnxEncoder(model, pooling, threads, path, batch_size, precision="int8" if int8 else "fp32")
    except OSError as exc:
        raise ModelLoadError(f"{model}: cannot load the ONNX graph: {first_line(exc)}") from exc
