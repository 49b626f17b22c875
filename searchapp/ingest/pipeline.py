"""Synchronising a folder into an index: load -> split -> encode -> store, only for what changed."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from searchapp.errors import LoadError, SearchappError
from searchapp.ingest.loaders import load_document, selected, walk
from searchapp.ingest.splitter import OffsetsFn, SplitterConfig, split
from searchapp.store.base import Stores
from searchapp.types import Document, EncoderLike, NewDocument, Span, StoredDocument, dump_metadata

Progress = Callable[[int, int], None]
# (key, title, text) or (key, title, text, metadata)
Record = tuple[str, str, str] | tuple[str, str, str, Mapping[str, Any]]
# Encode and commit once this many passages are pending: big enough for efficient batches and transactions,
# small enough that a crash loses little work.
FLUSH_PASSAGES = 512
# Flush the stores (the folder backend rewrites its vector file) at most this often during an ingest, so
# other processes find it current.
SAVE_EVERY_S = 30.0


@dataclass
class IngestSummary:
    """Outcome of one ingest. ``failures`` holds (path, reason) for each file skipped with a warning."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: int = 0
    passages_embedded: int = 0
    seconds: float = 0.0
    failures: list[tuple[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        """The stable JSON form documented in docs/cli.md."""
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "failed": self.failed,
            "passages_embedded": self.passages_embedded,
            "seconds": round(self.seconds, 3),
            "failures": [{"path": p, "reason": r} for p, r in self.failures],
        }


@dataclass
class _Pending:
    document: Document
    spans: list[Span]
    replaces: int | None  # id of the stored version this document replaces


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _in_scope(path: str, root: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether this run's walk would have picked ``path`` had it existed: only such documents are removed when
    missing, so ``--include '*.pdf'`` never drops the other documents ingested from the same folder."""
    if path == root:
        return True
    relative = Path(os.path.relpath(path, root)).as_posix()
    return selected(relative, Path(path).name, include, exclude)


class Ingest:
    """One run of an ingest, given the parts it works with: the stores (their writer lock already held), the
    encoder, and the splitter's settings and tokenizer offsets. Holds the pending batch and the running summary.
    """

    def __init__(
        self,
        stores: Stores,
        encoder: EncoderLike,
        splitter: SplitterConfig,
        offsets: OffsetsFn,
        progress: Progress | None = None,
        started: float | None = None,
    ) -> None:
        # perf_counter() when the run began (the caller's, if it waited for the writer lock first).
        self.started = time.perf_counter() if started is None else started
        self.stores = stores
        self.encoder = encoder
        self.splitter = splitter
        self.offsets = offsets
        self.progress = progress
        self.summary = IngestSummary()
        self.pending: list[_Pending] = []
        self.pending_passages = 0
        self.last_save = time.monotonic()

    def run(self, root: Path, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> IngestSummary:
        """Bring the index in line with the files under ``root``."""
        if not root.exists():
            raise SearchappError(f"{root}: no such file or folder")
        # The same normalisation as walk's (abspath folds "..") so stored keys and the root compare.
        root_key = os.path.abspath(root)
        unlisted: list[str] = []

        def cannot_list(path: str, reason: str) -> None:
            unlisted.append(path)
            self._fail(path, reason)

        files = list(walk(root, include, exclude, on_error=cannot_list))
        stored = self.stores.documents()
        # What was indexed under a folder that could not be listed this time is kept, not taken as deleted.
        seen: set[str] = {key for key in stored for folder in unlisted if _under(key, folder)}
        for done, path in enumerate(files, start=1):
            key = str(path.absolute())
            seen.add(key)
            self._visit(path, key, stored.get(key))
            if self.pending_passages >= FLUSH_PASSAGES:
                self._flush()
            if self.progress:
                self.progress(done, len(files))
        self._flush()
        gone = [
            doc.id
            for key, doc in stored.items()
            if doc.source == "file" and key not in seen and _under(key, root_key)
            and _in_scope(key, root_key, include, exclude)
        ]
        if gone:
            self.stores.write(remove=gone, add=[])
            self.summary.removed = len(gone)
        self.stores.flush()
        self.summary.seconds = time.perf_counter() - self.started
        return self.summary

    def run_records(self, records: Iterable[Record], source: str = "text") -> IngestSummary:
        """Index in-memory documents ``(key, title, text)`` or ``(key, title, text, metadata)``: new keys added,
        changed texts replaced (re-embedded), changed metadata or titles alone updated in place, others kept.

        ``key`` takes the place of the path. Used by the Python and HTTP APIs and for benchmark corpora.
        """
        stored = self.stores.documents()
        for key, title, text, *rest in records:
            metadata = rest[0] if rest else {}
            data = text.encode("utf-8")
            doc = Document(key, title or key, text, 0.0, len(data), hashlib.sha256(data).hexdigest(), metadata,
                           source)
            old = stored.get(key)
            if old is not None and old.sha256 == doc.sha256:
                if old.metadata != dump_metadata(metadata) or old.title != doc.title:
                    self.stores.set_metadata(old.id, metadata, doc.title)
                    self.summary.updated += 1
                else:
                    self.summary.unchanged += 1
                continue
            self._queue(doc, old)
            if self.pending_passages >= FLUSH_PASSAGES:
                self._flush()
        self._flush()
        self.stores.flush()
        self.summary.seconds = time.perf_counter() - self.started
        return self.summary

    def _queue(self, doc: Document, stored: StoredDocument | None) -> None:
        spans = split(doc.text, self.offsets, self.splitter)
        if not spans:
            self._fail(doc.path, "no text")
            return
        self.pending.append(_Pending(doc, spans, stored.id if stored else None))
        self.pending_passages += len(spans)

    def _visit(self, path: Path, key: str, stored: StoredDocument | None) -> None:
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:
            # A name that is not UTF-8 (undecodable bytes, kept by Python as surrogates) cannot be stored as
            # text; inserting it would fail the whole batch. The warning shows it with replacement characters.
            self._fail(key.encode("utf-8", "surrogateescape").decode("utf-8", "replace"), "file name is not UTF-8")
            return
        try:
            st = path.stat()
            if stored and stored.mtime == st.st_mtime and stored.size == st.st_size:
                self.summary.unchanged += 1
                return
            doc = replace(load_document(path), path=key)
        except LoadError as exc:
            self._fail(key, exc.reason)
            return
        except OSError as exc:
            self._fail(key, f"cannot read: {exc.strerror or exc}")
            return
        if stored and stored.sha256 == doc.sha256:
            self.stores.touch(stored.id, doc.mtime)
            self.summary.unchanged += 1
            return
        self._queue(doc, stored)

    def _fail(self, path: str, reason: str) -> None:
        self.summary.failed += 1
        self.summary.failures.append((path, reason))

    def _flush(self) -> None:
        if not self.pending:
            return
        texts = [p.document.text[s.start : s.end] for p in self.pending for s in p.spans]
        vectors = self.encoder.encode(texts)
        items: list[NewDocument] = []
        row = 0
        for p in self.pending:
            items.append(NewDocument(p.document, p.spans, vectors[row : row + len(p.spans)]))
            row += len(p.spans)
        replaced = [p.replaces for p in self.pending if p.replaces is not None]
        self.stores.write(remove=replaced, add=items)
        self.summary.updated += len(replaced)
        self.summary.added += len(self.pending) - len(replaced)
        self.summary.passages_embedded += len(texts)
        self.pending, self.pending_passages = [], 0
        if time.monotonic() - self.last_save > SAVE_EVERY_S:
            self.stores.flush(final=False)
            self.last_save = time.monotonic()
