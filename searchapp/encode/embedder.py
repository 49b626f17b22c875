"""``Encoder``, the library's encoder: texts -> the vectors an index with the same model, pooling and precision
stores for them.

It builds what an index builds (``EncoderSpec.build``, encode/spec.py): the same precision for ``auto`` (bf16,
int8 or fp32 by the CPU's flags, encode/precision.py), the same backend (the int8 graph, the fp32 graph,
OpenVINO or torch) and so the same vectors as the index's passages, its ``POST /v1/embeddings`` and a Ray
ingest's actors. ``backend`` and ``precision`` say which it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from searchapp.encode.catalog import DEFAULT_MODEL, canonical_name
from searchapp.encode.device import device_class
from searchapp.encode.encoder import LazyEncoder
from searchapp.encode.spec import EncoderSpec, backend_of
from searchapp.setting import whole


class Encoder:
    """Embeds texts as an index with these settings embeds its passages.

    ``model``, ``pooling`` (``pooling_params``) and ``precision`` (``auto``, ``fp32``, ``bf16``, ``fp16`` on a
    GPU, ``int8``) are an index's settings; ``batch_size``, ``threads`` and ``device`` (``auto``, ``cpu``,
    ``cuda``, ``cuda:N``) its runtime knobs, with the same defaults as ``Index``. The model loads on first use.

    ``encode(texts)`` returns float32 ``(n, d)`` with unit-length rows (inner product is cosine), in the input
    order. A text's vector is the same alone or in any batch (to float rounding, whatever the precision).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        pooling: str = "mean",
        pooling_params: dict[str, Any] | None = None,
        batch_size: int = 32,
        threads: int | None = None,
        precision: str = "auto",
        device: str = "auto",
    ) -> None:
        whole("batch_size", batch_size, ge=1)
        self.spec = EncoderSpec(canonical_name(model), pooling, dict(pooling_params or {}), precision, batch_size,
                                threads, None, device)
        self._encoder = LazyEncoder(lambda: self.spec.build("ingest"))

    @property
    def model_name(self) -> str:
        """The model's canonical name."""
        return self.spec.model

    @property
    def pooling(self) -> str:
        """The pooling's name (encode/pooling.py)."""
        return self.spec.pooling

    @property
    def batch_size(self) -> int:
        """Texts per forward pass at most."""
        return self.spec.batch_size

    @property
    def precision(self) -> str:
        """What the vectors are embedded in: ``fp32``, ``bf16``, ``fp16`` or ``int8`` (``auto`` resolved here)."""
        return self.spec.embeds_in

    @property
    def device(self) -> str:
        """The device class it embeds on: ``cpu`` or ``cuda``."""
        return device_class(self.spec.device)

    @property
    def backend(self) -> str:
        """The backend that embeds (encode/spec.py: ``onnx-int8``, ``onnx``, ``openvino``, ``torch``): the one
        built once loaded, before that the one preferred here."""
        if self._encoder.is_loaded:
            return backend_of(self._encoder.loaded) or self.spec.ingests_with.name
        return self.spec.ingests_with.name

    @property
    def loaded(self) -> Any:
        """The backend's encoder, built now if it was not yet."""
        return self._encoder.loaded

    @property
    def dimension(self) -> int:
        """Vector dimension d (loads the model)."""
        return self._encoder.dimension

    @property
    def max_tokens(self) -> int:
        """Tokens the model accepts in one input, special tokens included (loads the model)."""
        return int(self.loaded.max_tokens)

    @property
    def max_text_tokens(self) -> int:
        """Word pieces a text may hold, special tokens excluded (loads the model)."""
        return int(self.loaded.max_text_tokens)

    def token_counts(self, texts: list[str]) -> list[int]:
        """Tokens the model sees for each text, special tokens included, before any truncation."""
        return list(self.loaded.token_counts(texts))

    def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray:
        """Vectors for ``texts``: float32 ``(n, d)``, unit rows. A text over the model's limit is refused
        (``ConfigError``) unless ``truncate`` cuts it."""
        return self._encoder.encode(texts, truncate=truncate)
