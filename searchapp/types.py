"""Frozen value objects that cross module seams."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Document:
    """A loaded file or an added text: its full text and identity.

    ``path`` is the file's absolute path, or the id a text was added with; ``mtime`` is seconds since the epoch
    (0 for texts); ``sha256`` is the hex digest of the file's bytes (of the UTF-8 text for texts); ``metadata``
    a JSON-serialisable mapping; ``source`` ``"file"`` or ``"text"``.
    """

    path: str
    title: str
    text: str
    mtime: float
    size: int
    sha256: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: str = "file"


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
    raw scores of each side, ``None`` where the mode did not compute them. ``path`` is the document's path, or
    the id of a text added through the API; ``start``/``end`` the passage's span in the document's text;
    ``metadata`` the document's metadata.
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
    metadata: Mapping[str, Any] = field(default_factory=dict)

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
            "metadata": dict(self.metadata),
        }
