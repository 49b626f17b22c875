"""The storage seam: what an index needs of its storage, whatever engine holds it.

``Index`` builds one ``Stores`` and hands it to the ingest pipeline, the query engine and the evaluation runner;
none of them knows which engine is behind it. A backend keeps its parts in step (documents, passages, the
lexical index and the vectors move together, a group of documents in one transaction) and gives every hybrid
candidate both real scores. The record operations are written once for both backends (``store/records.py``);
``store/folder.py`` is the folder backend (SQLite + FTS5 + a FAISS file), ``store/postgres/`` the PostgreSQL one
(pgvector + pg_textsearch).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from searchapp.errors import ConfigError
from searchapp.filters import Filter
from searchapp.lines import Place
from searchapp.store.rows import Candidates, DocumentPassages, NewDocument, PassageRecord, StoredDocument
from searchapp.store.vector_policy import VectorPolicy
from searchapp.types import ExportedDocument, ExportedPassage, Run, names_no_document

# Rows fetched from a cursor at a time by a streamed read (export).
STREAM_ROWS = 1000


class Reader(ABC):
    """One read session (a batch of queries), restricted to the documents a filter lets through."""

    @abstractmethod
    def lexical(self, query: str, k: int) -> Run:
        """The ``k`` best passages by BM25 (scores > 0), best first."""

    @abstractmethod
    def dense(self, qvec: np.ndarray, k: int) -> Run:
        """The ``k`` nearest passages to ``qvec`` (float32 ``(d,)``, unit length) by cosine, best first."""

    @abstractmethod
    def gather(self, query: str, qvec: np.ndarray, k0: int) -> Candidates:
        """The union of each side's top ``k0``, every candidate with its real cosine and BM25 score (0 where it
        shares no term with the query)."""

    @abstractmethod
    def hydrate(self, ids: Sequence[int]) -> dict[int, PassageRecord]:
        """Passages by id with their document's path, title and metadata (unknown ids left out)."""

    @abstractmethod
    def documents_of(self, ids: Sequence[int]) -> dict[int, int]:
        """Each passage's document id, by passage id (unknown ids left out): what grouping by document reads,
        rather than whole passages."""

    def term_idf(self, query: str) -> dict[str, float] | None:
        """Each of ``query``'s terms (``analysis.query_terms``) with the inverse document frequency the lexical
        ranking weighs it by, over the whole index whatever the filter; ``None`` where the engine does not give
        it (this default: PostgreSQL's pg_textsearch keeps its statistics to itself)."""
        return None


class Stores(ABC):
    """An index's storage, kept in step. Writers call :meth:`writing` first; everything else may run in any
    thread of any process."""

    # The backend's name, as ``status`` shows it (and as vector_policy.DEFAULT_THRESHOLDS keys it).
    backend: str
    _policy: VectorPolicy

    @property
    def policy(self) -> VectorPolicy:
        """When the vector index is exact and when approximate; the index sets it once its settings are read."""
        return self._policy

    @policy.setter
    def policy(self, policy: VectorPolicy) -> None:
        # A policy naming no threshold gets this backend's: the one place a threshold is filled in.
        self._policy = policy.for_backend(self.backend)

    # -- settings ------------------------------------------------------------------------------------------

    @abstractmethod
    def settings(self) -> dict[str, str]:
        """The stored settings rows (JSON text values); empty for an index being created."""

    @abstractmethod
    def put_settings(self, rows: Mapping[str, str]) -> None:
        """Insert or replace settings rows."""

    # -- writing -------------------------------------------------------------------------------------------

    @abstractmethod
    def writing(self, wait: bool = True, timeout: float = 0.0) -> contextlib.AbstractContextManager[None]:
        """Hold the index's one writer lock: another thread of this process waits its turn (with ``wait=False``
        it gets ``IndexLockedError``), another process's hold is waited for up to ``timeout`` seconds, then
        ``IndexLockedError``. On entry, catch up with
        what other writers committed (the folder backend loads its vector file and checks it against the
        database, rebuilding it if it is stale)."""

    def use_lexical_engine(self, name: str, timeout: float = 0.0) -> int:
        """Move the index to the lexical engine ``name``; the passages indexed (0 where it already used it). A
        backend with one lexical index (PostgreSQL's, pg_textsearch's BM25) has no other: ``ConfigError``."""
        raise ConfigError(f"a {self.backend} index has one lexical index, its own; it has no other engine")

    @abstractmethod
    def collection_counts(self) -> dict[str, tuple[int, int]]:
        """Each named collection holding a document: name -> (documents, passages), read from a count kept with
        the documents' writes (no document or passage is read)."""

    def check_held(self, flt: Filter) -> None:
        """``ConfigError`` listing what the index holds where ``flt`` names a collection or a path prefix it does
        not hold: no answer would read as "nothing relevant" (a misspelled name). The one rule of every listing and
        search (the query engine asks it only when a query found nothing, so a search that finds something pays
        for no lookup)."""
        if flt.collection is not None and not names_no_document(flt.collection):
            held = self.collection_counts()
            if flt.collection not in held:
                names = ", ".join(sorted(held)) if held else "none: no document is in a named collection"
                raise ConfigError(f"collection {flt.collection!r} is not in this index; its collections: {names}")
        # A string no database's text can hold (a NUL) matches nothing, and is no misspelling to list names for.
        if (flt.path_prefix is not None and not names_no_document(flt.path_prefix)
                and not self.holds_prefix(flt.path_prefix)):
            folder = self.file_folder()
            where = f"its files are under {folder}" if folder else "it holds no file"
            raise ConfigError(f"no document's path or id starts with {flt.path_prefix!r}: {where}")

    @abstractmethod
    def document_sha256(self, key: str) -> str | None:
        """The content hash recorded for the document ``key``, ``None`` where there is none."""

    @abstractmethod
    def holds_prefix(self, prefix: str) -> bool:
        """Whether some document's key (a file's path or a text's id) starts with ``prefix``."""

    @abstractmethod
    def file_folder(self) -> str | None:
        """The deepest folder holding every indexed file, ``None`` without files."""

    @abstractmethod
    def document_page(self, offset: int = 0, limit: int | None = None,
                      collection: str | None = None) -> list[StoredDocument]:
        """The documents by path (or text id), from the ``offset``-th, at most ``limit`` of them (all without),
        those of ``collection`` only where one is named."""

    @abstractmethod
    def documents(self) -> dict[str, StoredDocument]:
        """Every indexed document by path (or text id), for change detection."""

    @abstractmethod
    def document_ids(self, keys: Sequence[str], source: str | None = None) -> dict[str, int]:
        """Key -> id of the documents with these paths or text ids (of ``source`` only, if given)."""

    @abstractmethod
    def touch(self, doc_id: int, mtime: float, passages_version: int | None = None,
              starts: Sequence[Place] | None = None) -> None:
        """Record a new modification time for a document whose content did not change (and, given, the reader
        version that made the same passages of it again, and where each of its passages stands, in order)."""

    @abstractmethod
    def passage_layout(self, doc_id: int) -> list[tuple[int, int, str]]:
        """``(start, end, section)`` of each of a document's passages, in order."""

    @abstractmethod
    def passage_parts(self, doc_ids: Sequence[int]) -> list[tuple[int, str, str, int]]:
        """``(passage id, text, section path, word pieces)`` of every passage of the documents ``doc_ids``: what
        each one's embedding input was made of (``ingest/sections.passage_input``)."""

    @abstractmethod
    def vectors_of(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """Stored vectors by passage id: float32 ``(d,)`` each (unknown ids are left out)."""

    @abstractmethod
    def set_metadata(self, doc_id: int, metadata: Mapping[str, Any], title: str) -> None:
        """Replace a document's metadata and title (its text and passages unchanged)."""

    @abstractmethod
    def write(self, remove: Sequence[int], add: Sequence[NewDocument]) -> None:
        """Remove documents by id and add new ones with their passages and vectors, in one transaction: readers
        see all of it or none of it."""

    @abstractmethod
    def flush(self, final: bool = True) -> None:
        """Make what was written durable everywhere: at the end of a write session (``final``), and now and then
        during a long one (``final=False``: cheap upkeep only)."""

    # -- reading -------------------------------------------------------------------------------------------

    @abstractmethod
    def reader(self, flt: Filter | None = None, dense: bool = True) -> contextlib.AbstractContextManager[Reader]:
        """A read session over the documents ``flt`` lets through (``dense=False``: lexical searches only, so
        the vectors need not be loaded)."""

    @abstractmethod
    def document_passages(self, path: str, start: int, end: int) -> DocumentPassages | None:
        """The document with this path (or text id), with its passages that overlap the characters ``[start,
        end)`` in text order (the full text is not stored); ``None`` if there is no such document."""

    @abstractmethod
    def export(self, vectors: bool = False) -> Iterator[ExportedDocument | ExportedPassage]:
        """Every document (by path), then every passage (by id, with its vector if ``vectors``), all from one
        snapshot of the index and streamed: a batch of rows at a time, never the whole index in memory. The
        snapshot is held until the iterator is exhausted or closed."""

    @abstractmethod
    def is_empty(self) -> bool:
        """Whether no passage is stored."""

    @abstractmethod
    def counts(self) -> tuple[int, int]:
        """(documents, passages)."""

    @abstractmethod
    def passage_documents(self) -> dict[int, str]:
        """Passage id -> its document's path (or text id)."""

    @abstractmethod
    def vector_kind(self) -> str:
        """The vector index's kind (``flat`` exact, ``ivf`` approximate), cheaply."""

    @abstractmethod
    def disk_bytes(self) -> int:
        """Bytes the index takes on disk."""

    def facts(self) -> dict[str, object]:
        """What ``status`` shows of the engine holding the index beyond the common fields (its versions, whether
        it is read-only, warnings about known bugs)."""
        return {}

    @abstractmethod
    def discard(self) -> None:
        """Remove what opening with ``create`` made, when the index's creation did not finish (its settings were
        never stored); then close."""

    @abstractmethod
    def close(self) -> None:
        """Release connections and files."""

    def __enter__(self) -> Stores:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

