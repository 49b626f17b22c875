"""The tests' deterministic encoder, in a module of its own so that a child process can use it without importing
pytest (tests/conftest.py gives it as the ``fake_encoder`` fixture)."""

from __future__ import annotations

import hashlib
import re

import numpy as np


class FakeEncoder:
    """Deterministic bag-of-words hashing encoder: texts sharing words get similar unit vectors."""

    dimension = 64

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
                out[i, h % self.dimension] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)

    @property
    def embedded(self) -> int:
        """Number of texts encoded so far."""
        return sum(len(c) for c in self.calls)


# How the lines an ingest prints on stderr to say where it is start (cli/progress.py): its stages, then passages.
PROGRESS = ("listing files", "reading files ", "loading the model", "embedded ")
