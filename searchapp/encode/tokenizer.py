"""The model's own fast tokenizer, loaded without importing torch or transformers."""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class ModelOffsets:
    """The splitter's offsets function for ``model``: :func:`token_offsets` with its tokenizer (loaded once per
    process). A small value, so that workers elsewhere can be sent it."""

    model: str

    def __call__(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        return token_offsets(load_tokenizer(self.model), texts)

    @property
    def splits_at_whitespace(self) -> bool:
        """Whether the tokenizer counts two texts joined by ASCII whitespace as the sum of their counts (the
        splitter's ``SPLITS_AT_WHITESPACE``: it then need not tokenize its passages twice)."""
        return _splits_at_whitespace(self.model)


# Normalisers that map or delete each character on its own, keeping ASCII whitespace whitespace, and the
# pre-tokenizers that split at all of it: a tokenizer made of these makes no word piece across a space, and what it
# makes between two spaces depends on what lies between them alone (the model, WordPiece or other, works on each
# pre-token by itself).
_PER_CHARACTER = frozenset({"BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents"})
_WHITESPACE_SPLITTING = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit"})


@lru_cache(maxsize=4)
def _splits_at_whitespace(model: str) -> bool:
    tok = load_tokenizer(model)
    normalizer = None if tok.normalizer is None else type(tok.normalizer).__name__
    pre = None if tok.pre_tokenizer is None else type(tok.pre_tokenizer).__name__
    return (normalizer is None or normalizer in _PER_CHARACTER) and pre in _WHITESPACE_SPLITTING
