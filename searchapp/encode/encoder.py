"""``TorchEncoder``: texts -> unit-length float32 vectors through torch's forward pass, from a model and a pooling
strategy (one backend of encode/spec.py; the library's ``searchapp.Encoder``, encode/embedder.py, chooses among
them); ``LazyEncoder``, an encoder made on first use.

Importing this module does not import torch; the model loads on first use.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from searchapp.encode.catalog import DEFAULT_MODEL, canonical_name
from searchapp.encode.device import check_device, resolve_device
from searchapp.encode.pooling import get_pooling, last_layer_only
from searchapp.encode.precision import check_precision
from searchapp.errors import ConfigError
from searchapp.setting import whole
from searchapp.types import EncoderLike

if TYPE_CHECKING:
    from searchapp.encode.transformer import LayerStates, TransformerModel


class _Turns:
    """A reentrant lock granted in the order it was asked for.

    An encode holds it one batch at a time; with ``threading.RLock`` the thread that releases it may take it
    straight back, so a bulk job would still keep a waiting query out until its last batch.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[int] = deque()
        self._owner: int | None = None
        self._depth = 0

    def __enter__(self) -> None:
        me = threading.get_ident()
        with self._cond:
            if self._owner == me:
                self._depth += 1
                return
            self._queue.append(me)
            try:
                while self._owner is not None or self._queue[0] != me:
                    self._cond.wait()
            except BaseException:  # interrupted while waiting: give up the place in the queue
                self._queue.remove(me)
                self._cond.notify_all()
                raise
            self._queue.popleft()
            self._owner, self._depth = me, 1

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._depth -= 1
            if self._depth == 0:
                self._owner = None
                self._cond.notify_all()


_MODELS: dict[tuple[str, int | None, str, str], TransformerModel] = {}
# One tokenizer call or forward pass at a time per process: a fast tokenizer used from two threads at once fails
# ("Already borrowed"), and two forward passes on the same cores only slow each other down. A server's threads
# rely on this. Taken per batch, in turn, so that a query waits for one batch of a bulk job, not all of it.
_LOCK = _Turns()
# Texts tokenized per turn when counting tokens.
_COUNT_CHUNK = 256
# Passages per forward pass on a GPU at the least: a batch of 32 leaves most of it idle, and length-sorted
# batches keep the padding of large ones small.
CUDA_BATCH = 256


def _shared_model(name: str, threads: int | None, precision: str, device: str = "cpu") -> TransformerModel:
    """One loaded model per process, name, precision and device: encoders and indexes opened again reuse its
    weights."""
    from searchapp.encode.transformer import TransformerModel

    key = (name, threads, precision, device)
    with _LOCK:
        if key not in _MODELS:
            _MODELS[key] = TransformerModel(name, threads=threads, precision=precision, device=device)
        return _MODELS[key]


class TorchEncoder:
    """Embeds texts with a transformer's layers and a named pooling strategy, through torch.

    ``precision`` is ``fp32``, ``bf16`` (autocast), ``fp16`` (a GPU's only) or ``auto`` (bf16 where the CPU has bf16
    instructions, bf16 or fp16 on a GPU, else fp32: int8 is the quantised ONNX graph's, and ``int8`` is refused
    here; see ``encode/precision.py``); pooling is always float32. ``device`` is
    ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (encode/device.py; ``auto``: a GPU where one is usable). On a GPU the
    batches hold at least ``CUDA_BATCH`` passages, and the next batch is tokenized while the GPU runs one.

    ``encode(texts)`` returns float32 ``(n, d)`` with unit-length rows, so that inner product is cosine.
    Texts are sorted by length into batches to keep padding small; the output keeps the input order.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        pooling: str = "mean",
        pooling_params: dict[str, Any] | None = None,
        batch_size: int = 32,
        threads: int | None = None,
        precision: str = "fp32",
        device: str = "cpu",
    ) -> None:
        self.model_name = canonical_name(model)
        self.pooling = pooling
        self.pooling_params = dict(pooling_params or {})
        self._pool = get_pooling(pooling, **self.pooling_params)  # fails fast on a bad name or parameter
        self._all_layers = not last_layer_only(pooling)
        self.batch_size = whole("batch_size", batch_size, ge=1)
        self.threads = threads
        self.precision = check_precision(precision)
        if precision == "int8":
            raise ConfigError("precision int8 is the model's quantised ONNX graph, not torch's: use "
                              "searchapp.Encoder(precision='int8')")
        self.device = check_device(device)
        self._model: TransformerModel | None = None
        self._dimension: int | None = None

    def _load(self) -> TransformerModel:
        if self._model is None:
            self._model = _shared_model(self.model_name, self.threads, self.precision, resolve_device(self.device))
        return self._model

    @property
    def model(self) -> TransformerModel:
        """The torch model this encoder runs (its tokenizer and forward pass, ``encode/transformer.py``), loaded
        on first use and shared by the encoders of the same model, threads, precision and device in this
        process."""
        return self._load()

    @property
    def dimension(self) -> int:
        """Vector dimension d of this model and pooling (loads the model)."""
        if self._dimension is None:
            import torch

            model = self._load()
            # Pool a dummy batch: concatenating poolings change d, and this costs no forward pass.
            dummy = torch.zeros(model.num_layers + 1, 1, 2, model.dimension, device=model.device)
            mask = torch.ones(1, 2, dtype=torch.long, device=model.device)
            self._dimension = int(self._pool(dummy, mask).shape[-1])
        return self._dimension

    @property
    def max_text_tokens(self) -> int:
        """Word pieces a text may hold, special tokens excluded (loads the model)."""
        return self._load().max_text_tokens

    @property
    def max_tokens(self) -> int:
        """Tokens the model accepts in one input, special tokens included (loads the model)."""
        return self._load().max_length

    def token_counts(self, texts: list[str]) -> list[int]:
        """Tokens the model sees for each text, special tokens included, before any truncation."""
        model = self._load()
        counts: list[int] = []
        for i in range(0, len(texts), _COUNT_CHUNK):
            with _LOCK:
                chunk = model.tokenizer.encode_batch(texts[i : i + _COUNT_CHUNK], add_special_tokens=True)
            counts.extend(len(e.ids) for e in chunk)
        return counts

    def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray:
        """Vectors for ``texts``: float32 ``(n, d)``, rows of unit length (a zero vector stays zero)."""
        model = self._load()
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        with _LOCK:
            lengths = [len(e.ids) for e in model.tokenizer.encode_batch(texts, add_special_tokens=False)]
        order = np.argsort(lengths, kind="stable")
        size = max(self.batch_size, CUDA_BATCH) if model.cuda else self.batch_size
        batches = [order[i : i + size] for i in range(0, len(texts), size)]
        if model.cuda:
            self._encode_overlapped(model, texts, batches, truncate, out)
            return out
        for idx in batches:
            with _LOCK:
                states = model.forward([texts[j] for j in idx], truncate=truncate, all_layers=self._all_layers)
                out[idx] = self._vectors(states)
        return out

    def _vectors(self, states: LayerStates) -> np.ndarray:
        """Pooled, unit-length float32 ``(B, d)`` on the host."""
        import torch

        vecs = self._pool(states.hidden_states, states.attention_mask)
        return torch.nn.functional.normalize(vecs.float(), dim=-1).cpu().numpy()

    def _encode_overlapped(self, model: TransformerModel, texts: list[str], batches: list[np.ndarray],
                           truncate: bool, out: np.ndarray) -> None:
        """On a GPU: batch ``i + 1`` is tokenized into pinned memory while the GPU runs batch ``i`` (its kernels
        are queued, and only reading its vectors back waits for them)."""
        with _LOCK:
            ready = model.inputs([texts[j] for j in batches[0]], truncate)
            for n, idx in enumerate(batches):
                states = model.run(*ready, all_layers=self._all_layers)
                if n + 1 < len(batches):
                    ready = model.inputs([texts[j] for j in batches[n + 1]], truncate)
                out[idx] = self._vectors(states)


class LazyEncoder:
    """An encoder made on first use: a re-ingest that finds nothing changed, a lexical query or ``status`` never
    loads the model."""

    def __init__(self, make: Callable[[], EncoderLike]) -> None:
        self._make = make
        self._encoder: EncoderLike | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> EncoderLike:
        """The encoder, made now if it was not yet."""
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    self._encoder = self._make()
        return self._encoder

    @property
    def is_loaded(self) -> bool:
        """Whether the encoder is made already (the next encode does not wait for the model)."""
        return self._encoder is not None

    @property
    def dimension(self) -> int:
        """The vectors' dimension (loads the model)."""
        return self.loaded.dimension

    def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray:
        """:meth:`TorchEncoder.encode` of the encoder, made now if need be: float32 ``(n, d)`` unit vectors."""
        return self.loaded.encode(texts, truncate=truncate)
