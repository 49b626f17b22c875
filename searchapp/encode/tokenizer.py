"""The model's own fast tokenizer, loaded without importing torch or transformers."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from searchapp.encode.catalog import model_dir
from searchapp.errors import ModelLoadError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# [CLS] and [SEP] for BERT-style models: the part of the budget the passage text cannot use.
SPECIAL_TOKENS = 2


@lru_cache(maxsize=4)
def load_tokenizer(model: str) -> Tokenizer:
    """A ``tokenizers.Tokenizer`` with truncation and padding off (callers decide both)."""
    from tokenizers import Tokenizer

    path = Path(model_dir(model)) / "tokenizer.json"
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as exc:  # the Rust binding raises plain Exception for a bad or missing file
        raise ModelLoadError(f"{path}: cannot load tokenizer: {exc}") from exc
    tok.no_truncation()
    tok.no_padding()
    return tok


def token_offsets(tokenizer: Tokenizer, texts: list[str]) -> list[list[tuple[int, int]]]:
    """Character spans of the word pieces of each text, without special tokens."""
    encodings = tokenizer.encode_batch(texts, add_special_tokens=False)
    return [list(e.offsets) for e in encodings]


def model_offsets(model: str, texts: list[str]) -> list[list[tuple[int, int]]]:
    """:func:`token_offsets` with ``model``'s tokenizer (loaded once per process): the splitter's offsets function,
    bound to a model with ``functools.partial``, so that workers elsewhere can be sent it."""
    return token_offsets(load_tokenizer(model), texts)
