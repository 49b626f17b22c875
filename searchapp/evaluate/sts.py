"""STS-B format files: sentence pairs with a 0-5 gold score; Spearman of plain cosine x 100."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from searchapp.errors import SearchappError
from searchapp.evaluate.beir import read_lines
from searchapp.evaluate.metrics import spearman


class _Encodes(Protocol):
    def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray: ...


@dataclass(frozen=True)
class StsPairs:
    """Gold scores float64 ``(n,)`` and the two sentence lists."""

    scores: np.ndarray
    first: list[str]
    second: list[str]


def read_sts(path: Path) -> StsPairs:
    """Read an STS-B file: tab-separated, score in column 5, sentences in columns 6 and 7, no quoting."""
    scores: list[float] = []
    first: list[str] = []
    second: list[str] = []
    for n, line in enumerate(read_lines(path), start=1):
        cols = line.split("\t")
        if not line.strip():
            continue
        if len(cols) < 7:
            raise SearchappError(f"{path}:{n}: expected at least 7 tab-separated columns, got {len(cols)}")
        try:
            scores.append(float(cols[4]))
        except ValueError as exc:
            raise SearchappError(f"{path}:{n}: score {cols[4]!r} is not a number") from exc
        first.append(cols[5])
        second.append(cols[6])
    if not scores:
        raise SearchappError(f"{path}: no sentence pairs")
    return StsPairs(np.asarray(scores), first, second)


def sts_spearman(encoder: _Encodes, pairs: StsPairs) -> float:
    """Spearman x 100 between gold scores and the cosine of the two sentences' vectors."""
    a = encoder.encode(pairs.first, truncate=True)
    b = encoder.encode(pairs.second, truncate=True)
    cos = (a * b).sum(axis=1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    return 100.0 * spearman(pairs.scores, cos)
