"""``Encoder``: texts -> unit-length float32 vectors, from a model and a pooling strategy.

Importing this module does not import torch; the model loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from searchapp.encode.models import DEFAULT_MODEL, canonical_name
from searchapp.encode.pooling import get_pooling

if TYPE_CHECKING:
    from searchapp.encode.transformer import TransformerModel


_MODELS: dict[tuple[str, int | None], TransformerModel] = {}


def _shared_model(name: str, threads: int | None) -> TransformerModel:
    """One loaded model per process and name: encoders and indexes opened again reuse its weights."""
    from searchapp.encode.transformer import TransformerModel

    key = (name, threads)
    if key not in _MODELS:
        _MODELS[key] = TransformerModel(name, threads=threads)
    return _MODELS[key]


class Encoder:
    """Embeds texts with a transformer's layers and a named pooling strategy.

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
    ) -> None:
        self.model_name = canonical_name(model)
        self.pooling = pooling
        self.pooling_params = dict(pooling_params or {})
        self._pool = get_pooling(pooling, **self.pooling_params)  # fails fast on a bad name or parameter
        self.batch_size = batch_size
        self.threads = threads
        self._model: TransformerModel | None = None
        self._dimension: int | None = None

    def _load(self) -> TransformerModel:
        if self._model is None:
            self._model = _shared_model(self.model_name, self.threads)
        return self._model

    @property
    def dimension(self) -> int:
        """Vector dimension d of this model and pooling (loads the model)."""
        if self._dimension is None:
            import torch

            model = self._load()
            # Pool a dummy batch: concatenating poolings change d, and this costs no forward pass.
            dummy = torch.zeros(model.num_layers + 1, 1, 2, model.dimension)
            self._dimension = int(self._pool(dummy, torch.ones(1, 2, dtype=torch.long)).shape[-1])
        return self._dimension

    @property
    def max_text_tokens(self) -> int:
        """Word pieces a text may hold, special tokens excluded (loads the model)."""
        return self._load().max_text_tokens

    def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray:
        """Vectors for ``texts``: float32 ``(n, d)``, rows of unit length (a zero vector stays zero)."""
        import torch

        model = self._load()
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        lengths = [len(e.ids) for e in model.tokenizer.encode_batch(texts, add_special_tokens=False)]
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for i in range(0, len(texts), self.batch_size):
            idx = order[i : i + self.batch_size]
            states = model.forward([texts[j] for j in idx], truncate=truncate)
            vecs = self._pool(states.hidden_states, states.attention_mask)
            vecs = torch.nn.functional.normalize(vecs.float(), dim=-1)
            out[idx] = vecs.numpy()
        return out
