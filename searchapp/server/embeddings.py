"""``POST /v1/embeddings``: OpenAI's embeddings API over the index's encoder, the one its passages are embedded with."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

import numpy as np

from searchapp.errors import ConfigError
from searchapp.server.schemas import (
    MAX_EMBEDDING_TOKENS,
    MAX_INPUTS,
    Embedding,
    EmbeddingsRequest,
    EmbeddingsResponse,
    Usage,
)

if TYPE_CHECKING:
    from searchapp.types import EncoderLike


def _inputs(body: EmbeddingsRequest) -> list[str]:
    texts = [body.input] if isinstance(body.input, str) else body.input
    if not texts:
        raise ConfigError("input: give a string or a non-empty list of strings")
    if not all(isinstance(t, str) for t in texts):
        raise ConfigError("input: token ids are not accepted (they belong to another tokenizer); send text")
    if len(texts) > MAX_INPUTS:
        raise ConfigError(f"input: at most {MAX_INPUTS} texts per request, got {len(texts)}")
    for i, text in enumerate(texts):
        if not text.strip():  # type: ignore[union-attr]
            raise ConfigError(f"input[{i}]: empty string")
    return texts  # type: ignore[return-value]


def create(encoder: EncoderLike, body: EmbeddingsRequest, model_id: str, max_tokens: int) -> EmbeddingsResponse:
    """Embed the request's texts. A text over ``max_tokens`` (the index's passage budget, special tokens included)
    is an error, as at OpenAI, not truncated."""
    texts = _inputs(body)
    if body.dimensions is not None and body.dimensions != encoder.dimension:
        raise ConfigError(f"dimensions: this model gives {encoder.dimension}, asked {body.dimensions}")
    counts = encoder.token_counts(texts)
    # The index's passage budget, not the model's 512 positions: all-MiniLM-L6-v2 was trained on up to 256 word
    # pieces and the index's passages are embedded within the budget, so a longer input would get a vector of a
    # kind the model never learnt, and one not comparable with the index's.
    limit = min(max_tokens, encoder.max_tokens)
    over = next((i for i, n in enumerate(counts) if n > limit), None)
    if over is not None:
        raise ConfigError(f"input[{over}]: {counts[over]} tokens, over the limit of {limit} (the index's passage "
                          "budget, special tokens included): split it")
    if sum(counts) > MAX_EMBEDDING_TOKENS:
        raise ConfigError(f"input: {sum(counts)} tokens in all, over the limit of {MAX_EMBEDDING_TOKENS} per "
                          "request: send fewer or shorter texts")
    # The encoder takes turns batch by batch, so searches' queries are encoded between this request's batches.
    vectors = encoder.encode(texts)
    data = [
        Embedding(index=i, embedding=_encoded(v, body.encoding_format)) for i, v in enumerate(vectors)
    ]
    tokens = sum(counts)
    return EmbeddingsResponse(data=data, model=model_id, usage=Usage(prompt_tokens=tokens, total_tokens=tokens))


def _encoded(vector: np.ndarray, fmt: str) -> list[float] | str:
    """``float``: a JSON list; ``base64``: the little-endian float32 bytes, which the OpenAI client decodes."""
    if fmt == "base64":
        return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
    return [float(x) for x in vector]
