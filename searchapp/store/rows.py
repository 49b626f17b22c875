"""The rows the stores read and write, as the ingest and the query engine hand them over: a document as change
detection knows it, one ready to store, a hydrated passage, a passage as a document's text is rebuilt from it, a
hybrid query's candidates. Public values (documents, hits, exports) are in ``searchapp.types``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from searchapp.types import Document, DocumentIdentity, Span

if TYPE_CHECKING:
    import numpy as np  # annotations only: importing numpy costs a one-shot command ~0.15 s


@dataclass(frozen=True)
class Candidates:
    """Hybrid candidates of one query: both sides' raw scores (cosine, BM25) for the same passage ids."""

    query: str
    dense: dict[int, float]
    lexical: dict[int, float]


@dataclass(frozen=True)
class StoredDocument:
    """What change detection needs to know of an indexed document."""

    id: int
    path: str
    mtime: float
    size: int
    sha256: str
    metadata: str = "{}"  # canonical JSON, see dump_metadata
    source: str = "file"
    title: str = ""
    indexed_at: float | None = None  # when its row was written (Unix seconds, UTC); None: before migration 0004
    # The reader version its passages were made by (ingest/reading.reader_version); None: before migration 0007.
    passages_version: int | None = None
    n_passages: int = 0  # how many passages it holds


@dataclass(frozen=True)
class NewDocument:
    """A document ready to store: its passages' spans, float32 ``(n, d)`` vectors and section paths, row i for
    span i."""

    document: Document
    spans: Sequence[Span]
    vectors: np.ndarray
    # Each passage's section path (its headings, outermost first, joined by " > "), row i for span i; empty: none.
    sections: Sequence[str] = ()
    # The reader version that made these passages (ingest/reading.reader_version), recorded with the document.
    passages_version: int | None = None


@dataclass(frozen=True)
class PassageRecord:
    """A passage hydrated with its document's path, title, metadata and source (``"file"`` or ``"text"``), the
    section path it sits under (``""`` for none), where it starts as line and column of its document's text
    (``None``: not recorded), its source lines and its page (``lines.Place``)."""

    id: int
    path: str
    title: str
    start: int
    end: int
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str = "file"
    section: str = ""
    line: int | None = None
    column: int | None = None
    # Where its text's lines are not its file's (HTML), as stored: lines.load_source_lines reads it; and the page
    # it starts on in a paged format (PDF). None: not such a format, or not recorded.
    source_lines: str | None = None
    page: int | None = None


class StoredPassage(NamedTuple):
    """A stored passage as a document's text is rebuilt from it: its id, ``[start, end)`` in the document's text,
    its text, and where it starts as line and column (``None`` where an older index did not record it)."""

    id: int
    start: int
    end: int
    text: str
    line: int | None = None
    column: int | None = None


def dump_metadata(metadata: Mapping[str, Any]) -> str:
    """The canonical JSON text of a metadata mapping (sorted keys), so equal mappings compare equal as text."""
    return json.dumps(dict(metadata), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class DocumentPassages(DocumentIdentity):
    """A stored document and its passages that overlap a character range, in text order.

    The full text of a document is not stored, only its passages (``text[start:end]`` each) and its length
    ``n_chars``: what lies between passages is whitespace the splitter dropped (it keeps every other character),
    whose line breaks the passages' lines and columns tell. ``previous`` is the last passage ending at or before the
    range's start and ``following`` the first starting at or after its end (``None`` where there is none): they
    say how the whitespace at the range's edges is laid out.
    """

    passages: list[StoredPassage] = field(default_factory=list)
    previous: StoredPassage | None = None
    following: StoredPassage | None = None

    @property
    def around(self) -> list[StoredPassage]:
        """``passages`` with ``previous`` before them and ``following`` after them, where there are such."""
        return [*([self.previous] if self.previous else []), *self.passages,
                *([self.following] if self.following else [])]
