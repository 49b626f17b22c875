"""Frozen value objects that cross module seams."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Document:
    """A loaded file: its full text and identity.

    ``path`` is absolute; ``mtime`` is seconds since the epoch; ``sha256`` is the hex digest of the file's bytes.
    """

    path: str
    title: str
    text: str
    mtime: float
    size: int
    sha256: str


@dataclass(frozen=True)
class Span:
    """A passage's character span into its document's text: ``text[start:end]``."""

    start: int
    end: int
    n_tokens: int


@dataclass(frozen=True)
class Hit:
    """One ranked search result.

    ``score`` is the score of the ranking mode; ``dense_score`` (cosine) and ``lexical_score`` (BM25) are the
    raw scores of each side, ``None`` where the mode did not compute them.
    """

    rank: int
    score: float
    passage_id: int
    path: str
    title: str
    start: int
    end: int
    text: str
    dense_score: float | None = None
    lexical_score: float | None = None

    def to_dict(self) -> dict[str, object]:
        """The stable JSON form documented in docs/cli.md."""
        return {
            "rank": self.rank,
            "score": self.score,
            "dense_score": self.dense_score,
            "lexical_score": self.lexical_score,
            "passage_id": self.passage_id,
            "path": self.path,
            "title": self.title,
            "start": self.start,
            "end": self.end,
            "text": self.text,
        }
