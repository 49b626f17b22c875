"""Synchronising a folder into an index: load -> split -> encode -> store, only for what changed. The run
(:class:`Ingest`): planning what changed, reading ahead, committing in groups; one file's reading is
``ingest/reading.py``, the embedding during the reading ``ingest/prefetch.py``, the report ``ingest/summary.py``."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from searchapp.collection import KEY as COLLECTION_KEY
from searchapp.collection import setting_rows
from searchapp.encode.provenance import EmbeddedWith, Provenance
from searchapp.errors import DataRejectedError, SearchappError
from searchapp.ingest.files import Failed, Found, Scope, Skipped, is_under, walk, walk_picks
from searchapp.ingest.formats.load import MAX_FILE_BYTES
from searchapp.ingest.options import IngestOptions
from searchapp.ingest.prefetch import Prefetch
from searchapp.ingest.reading import ReadFile, Task, embeds, prepare, reader_version
from searchapp.ingest.reuse import Reuse, Reused, to_embed
from searchapp.ingest.sections import document_sections, passage_inputs
from searchapp.ingest.splitter import OffsetsFn, SplitterConfig, split
from searchapp.ingest.summary import SKIP_REASONS, IngestSummary
from searchapp.lines import places
from searchapp.store.base import Stores
from searchapp.store.rows import NewDocument, StoredDocument, dump_metadata
from searchapp.types import Document, EncoderLike, Span

__all__ = ["SKIP_REASONS", "Ingest", "IngestSummary", "Progress", "ReadFile", "Record", "Stages", "Task", "prepare"]

# (passages embedded so far, passages to embed in all; None where a distributed run cannot know it beforehand).
# A reporter that also has a ``stage(text)`` method is told what the run does before it embeds ("listing files",
# "reading files 12/300", "loading the model"): the CLI's (cli/progress.py); a plain callable hears passages only.
Progress = Callable[[int, int | None], None]
# (key, title, text) or (key, title, text, metadata)
Record = tuple[str, str, str] | tuple[str, str, str, Mapping[str, Any]]
# Encode and commit once this many passages are pending: big enough for efficient batches and transactions,
# small enough that a crash loses little work.
FLUSH_PASSAGES = 512
# Flush the stores (the folder backend rewrites its vector file) at most this often during an ingest, so
# other processes find it current.
SAVE_EVERY_S = 30.0
# Files are read and split before any is embedded, so that progress counts passages out of a known total; the
# documents read are kept for the embedding pass up to this many characters of text, files beyond it are read
# again then (memory stays bounded whatever the size of the folder).
READ_AHEAD_CHARS = 32 * 2**20
# While the files are read (before the total is known), the first documents read are embedded on a second thread:
# the model loads and the encoder works during the reading, which otherwise came first, alone. At most this many
# flushes' worth of passages (about 12 MB of vectors at 384 dimensions), and a job once a batch's worth waits.
PREFETCH_FLUSHES = 16
PREFETCH_MINIMUM = 32
# Passages encoded per call, on either thread, with progress after each (about a second of work on a laptop CPU);
# the worker also stops between two groups once the run is ending (an error, Ctrl-C), so a run that stops waits
# for one group, not for a whole job.
PROGRESS_GROUP = 64


# How a run's tasks are loaded, split (and embedded): each task's ReadFile and, where workers embedded it, its
# float32 (passages, d) vectors, in the order of the tasks (ingest/distributed.py's RayStages on a Ray cluster).
Stages = Callable[[list[Task]], Iterable[tuple[ReadFile, np.ndarray | None]]]


@dataclass
class _Pending:
    document: Document
    spans: Sequence[Span]
    replaces: int | None  # id of the stored version this document replaces
    # The stored vectors its unchanged passages keep (ingest/reuse.py); None: every passage is embedded.
    reused: Reused | None = None
    # float32 (passages to embed, d): of every passage, or only of those ``reused`` does not keep, once embedded
    # (a worker may have embedded them already).
    vectors: np.ndarray | None = None


class Ingest:
    """One run of an ingest, given the parts it works with: the stores (their writer lock already held), the
    encoder, the splitter's settings and tokenizer offsets, and for files the run's checked :class:`IngestOptions`.
    Holds the pending batch and the running summary.

    ``stages``: how the files' tasks are loaded, split (and embedded); by default here, one after the other. A
    distributed run passes its own (``ingest/distributed.py``); this run commits what they give back, so the
    writes stay in this process, under its writer lock. ``embedded_with``: what the run embeds with, asked once,
    just before the first write that stores vectors, and recorded among the index's settings then
    (``encode/provenance.py``): a run that fails later, a full disk say, leaves no vector unrecorded.
    """

    def __init__(
        self,
        stores: Stores,
        encoder: EncoderLike,
        splitter: SplitterConfig,
        offsets: OffsetsFn,
        options: IngestOptions | None = None,
        *,
        progress: Progress | None = None,
        started: float | None = None,
        context: str = "none",
        limit: int = 512,
        stages: Stages | None = None,
        embedded_with: Callable[[], EmbeddedWith] | None = None,
        index_folder: str | None = None,
    ) -> None:
        # perf_counter() when the run began (the caller's, if it waited for the writer lock first).
        self.started = time.perf_counter() if started is None else started
        self.stores = stores
        self.encoder = encoder
        self.splitter = splitter
        # What the encoder sees of a passage (sections.passage_inputs) and the model's limit in word pieces.
        self.context, self.limit = context, limit
        self.offsets = offsets
        self.options = options
        self.max_bytes = options.max_bytes if options is not None else MAX_FILE_BYTES
        self.stages = stages
        self.embedded_with = embedded_with
        # The index's own folder (a folder index's; handed down by Index): the walk neither reads nor counts it.
        self.index_folder = index_folder
        self.progress = progress
        self.summary = IngestSummary()
        self.pending: list[_Pending] = []
        self.pending_passages = 0
        self.gone: list[int] = []  # stored documents whose files hold no text any more
        self.last_save = time.monotonic()
        self.total: int | None = None  # passages this run will embed, once known
        # Passages the encoder has returned in this run, on either thread: progress counts these as each group of
        # PROGRESS_GROUP comes back, not as a commit lands (a first commit waited for the worker's whole prefix).
        self.embedded_now = 0
        self._count_lock = threading.Lock()
        self.recorded = False  # whether this run's embedding is among the index's settings yet
        self.prefetch: Prefetch | None = None  # embedding the first documents while the rest are read
        # Where the stored vectors a changed, renamed or copied file keeps are found (None: every passage of a
        # changed file is embedded), and what was found for each document read ahead, by key.
        self.reuse: Reuse | None = None
        self.found: dict[str, Reused | None] = {}

    def run(self) -> IngestSummary:
        """Bring the index in line with the files under the options' root (only those at or under ``within``,
        when given: the rest is neither read nor removed)."""
        if self.options is None:
            raise SearchappError("this ingest was given no files: make it with IngestOptions")
        o = self.options
        # The same normalisation as walk's (the real path: a folder reached through a link, or renamed back, is
        # the same folder) so stored keys and the root compare.
        root_key = os.path.realpath(o.root)
        stored = self.stores.documents()
        scope = None if o.within is None else Scope(o.within)
        if o.collection is not None and o.description is not None:
            self.stores.put_settings(setting_rows(o.collection, o.description))
        self._stage("listing files")
        tasks, seen = self._plan(stored, o)
        if o.reuse and self.stages is None:  # a distributed run's workers embed whole documents
            self.reuse = Reuse(self.stores, self.context, self.limit, stored.values())
        results = self.stages(tasks) if self.stages is not None else self._read_ahead(tasks)
        for result, vectors in results:
            self._take(result, vectors)
            if self.pending_passages >= FLUSH_PASSAGES:
                self._flush()
        self._flush()
        gone = [
            doc.id
            for key, doc in stored.items()
            # Only what this run's walk would have picked is removed when missing: `--include '*.pdf'` never
            # drops the other documents ingested from the same folder.
            if doc.source == "file" and key not in seen and is_under(key, root_key)
            and walk_picks(key, root_key, o.include, o.exclude) and (scope is None or scope.covers(key))
        ] + self.gone
        if gone:
            self.stores.write(remove=gone, add=[])
            self.summary.removed = len(gone)
        self.stores.flush()
        self.summary.seconds = time.perf_counter() - self.started
        return self.summary

    def _read_ahead(self, tasks: list[Task]) -> Iterator[tuple[ReadFile, np.ndarray | None]]:
        """Read and split every task first, so that :attr:`total` (the passages to embed) is known before the
        first is embedded; keep what was read up to :data:`READ_AHEAD_CHARS` and read the rest again after.
        Meanwhile the first documents read are embedded on a second thread (:class:`Prefetch`)."""
        kept: list[ReadFile | None] = []
        counts: list[int] = []
        chars = 0
        prefetch = self.prefetch = Prefetch(
            self.encoder,
            lambda r: to_embed(self._inputs(r.document, r.spans), self.found.get(r.task.key)),  # type: ignore[arg-type]
            PREFETCH_FLUSHES * FLUSH_PASSAGES, PREFETCH_MINIMUM, PROGRESS_GROUP, on_group=self._embedded)
        try:
            for n, task in enumerate(tasks, 1):
                self._stage(f"reading files {n}/{len(tasks)}" + (", loading the model" if prefetch.loading else
                                                                 f", {self.embedded_now} passages embedded"
                                                                 if self.embedded_now else ""))
                result = prepare(task, self.splitter, self.offsets, self.max_bytes)
                found = self._reusable(result) if embeds(result) else None
                counts.append(len(result.spans) - (found.count if found is not None else 0))
                size = len(result.document.text) if result.document is not None else 0
                if chars + size <= READ_AHEAD_CHARS:
                    chars += size
                    kept.append(result)
                    if embeds(result):
                        self.found[task.key] = found
                        if counts[-1]:  # a document that keeps every vector has nothing for the worker
                            prefetch.offer(n - 1, result, counts[-1])
                else:
                    kept.append(None)
                    prefetch.close()  # what it embeds stays a prefix of the tasks
            prefetch.close()
            self.total = sum(counts)
            if self.progress:
                self.progress(min(self.embedded_now, self.total), self.total)
            for i, task in enumerate(tasks):
                result, kept[i] = kept[i], None  # let each document go once it is taken
                if result is None:
                    result = prepare(task, self.splitter, self.offsets, self.max_bytes)
                    found = self._reusable(result) if embeds(result) else None
                    if embeds(result):
                        self.found[task.key] = found
                    # Changed since it was first read: the total follows what is embedded.
                    self.total += len(result.spans) - (found.count if found is not None else 0) - counts[i]
                if prefetch.loading:
                    self._stage("loading the model")
                yield result, prefetch.vectors(i)
        finally:
            prefetch.shutdown()
            self.prefetch = None

    def _plan(self, stored: dict[str, StoredDocument], o: IngestOptions) -> tuple[list[Task], set[str]]:
        """Walk the root: the files to load (new, or changed by size or mtime), and every key seen (what is
        indexed under a folder that could not be listed counts as seen: kept, not taken as deleted)."""
        unlisted: list[str] = []
        files: list[Path] = []
        for item in walk(o.root, o.include, o.exclude, follow_links=o.follow_links, within=o.within,
                         index_folder=self.index_folder, ignore_rules=o.ignore_rules):
            if isinstance(item, Found):
                files.append(item.path)
            elif isinstance(item, Skipped):
                if item.path is None:
                    self.summary.skip(item.reason, item.where)
                else:
                    self._fail(item.path, item.reason)
            elif isinstance(item, Failed):
                unlisted.append(item.path)
                self._fail(item.path, item.reason)
            else:
                self.summary.warnings.append((item.path, item.warning))
        seen: set[str] = {key for key in stored for folder in unlisted if is_under(key, folder)}
        tasks: list[Task] = []
        for path in files:
            key = str(path.absolute())
            seen.add(key)
            try:
                key.encode("utf-8")
            except UnicodeEncodeError:
                # A name that is not UTF-8 (undecodable bytes, kept by Python as surrogates) cannot be stored as
                # text; inserting it would fail the whole batch. The warning shows it with replacement characters.
                self._fail(key.encode("utf-8", "surrogateescape").decode("utf-8", "replace"), "file name is not UTF-8")
                continue
            old = stored.get(key)
            if old is not None and o.collection is not None:
                self._collect(old, o.collection)
            try:
                st = path.stat()
            except OSError as exc:
                self._fail(key, f"cannot read: {exc.strerror or exc}")
                continue
            stale = old is not None and old.passages_version != reader_version(key)
            if old and not o.force and not stale and old.mtime == st.st_mtime and old.size == st.st_size:
                self.summary.unchanged += 1
                continue
            tasks.append(Task(str(path), key, old.id if old else None, old.sha256 if old else None, stale))
        return tasks, seen

    def _collect(self, old: StoredDocument, name: str) -> None:
        """Put an indexed file in collection ``name`` (its metadata's ``collection``), where it is not there yet:
        a file ingested into another collection, or into none, moves without being read or embedded again."""
        metadata = {**json.loads(old.metadata), COLLECTION_KEY: name}
        if dump_metadata(metadata) != old.metadata:
            self.stores.set_metadata(old.id, metadata, old.title)

    def _take(self, result: ReadFile, vectors: np.ndarray | None = None) -> None:
        """Record one prepared task: a failure, a touch, or a document pending its commit. ``vectors``: float32
        ``(passages, d)``, those a worker embedded already of the passages that keep no stored vector."""
        late = result.task.key not in self.found  # what it keeps is looked for once it is known to be embedded
        reused = self.found.pop(result.task.key, None)
        if result.failure is not None:
            if result.skipped is not None:
                self.summary.skipped[result.skipped] += 1
            if result.skipped == "empty":
                # Nothing to search (an empty file, a page that only includes another): no failure, but an indexed
                # version must not stay searchable once its content is taken out.
                if result.task.stored_id is not None:
                    self.gone.append(result.task.stored_id)
                return
            if result.no_text and result.task.stored_id is not None:
                # Emptied, blanked or turned to binary (say, to take a secret out): the old passages must not
                # stay searchable. A file that cannot be read at all keeps its indexed version.
                self.gone.append(result.task.stored_id)
                self._fail(result.task.key, f"{result.failure} (its indexed version was removed)")
            elif result.task.stored_id is not None:
                self._fail(result.task.key, f"{result.failure} (its indexed version is kept)")
            else:
                self._fail(result.task.key, result.failure)
            return
        self.summary.warnings.extend((result.task.key, note) for note in result.notes)
        doc = result.document
        if doc is None:  # pragma: no cover - prepare() always gives a document or a failure
            raise SearchappError(f"{result.task.key}: nothing prepared")
        if result.unchanged or (result.same_content and self._same_passages(result)):
            if result.task.stored_id is not None and result.same_content:
                # Read again by a newer reader: the stored passages take where they start (lines.py) with it.
                starts = places(doc.text, [s.start for s in result.spans], [s.end for s in result.spans],
                                doc.source_lines, doc.pages)
                self.stores.touch(result.task.stored_id, doc.mtime, reader_version(doc.path, doc.source), starts)
            elif result.task.stored_id is not None:
                self.stores.touch(result.task.stored_id, doc.mtime)
            self.summary.unchanged += 1
            return
        if late:
            reused = self._reusable(result)
            if reused is not None and self.total is not None:
                self.total -= reused.count  # counted in the total when it was read, as if embedded whole
        want = len(result.spans) - (reused.count if reused is not None else 0)
        if vectors is not None and len(vectors) != want:
            raise SearchappError(f"{result.task.key}: {len(vectors)} vectors came back for {want} passages")
        if self.options is not None and self.options.collection is not None:
            doc = replace(doc, metadata={**doc.metadata, COLLECTION_KEY: self.options.collection})
        self.pending.append(_Pending(doc, result.spans, result.task.stored_id, reused, vectors))
        self.pending_passages += len(result.spans)

    def run_records(self, records: Iterable[Record], source: str = "text") -> IngestSummary:
        """Index in-memory documents ``(key, title, text)`` or ``(key, title, text, metadata)``: new keys added,
        changed texts replaced (re-embedded), changed metadata or titles alone updated in place, others kept.

        ``key`` takes the place of the path. Used by the Python and HTTP APIs and for benchmark corpora.
        """
        stored = self.stores.documents()
        self.reuse = Reuse(self.stores, self.context, self.limit, stored.values())
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
        replaces = stored.id if stored else None
        reused = self.reuse.find(doc.sha256, self._inputs(doc, spans), replaces) if self.reuse else None
        self.pending.append(_Pending(doc, spans, replaces, reused))
        self.pending_passages += len(spans)

    def _reusable(self, result: ReadFile) -> Reused | None:
        """The stored vectors ``result``'s passages may keep (``ingest/reuse.py``), where the run reuses any."""
        if self.reuse is None or result.document is None or not result.spans:
            return None
        doc = result.document
        return self.reuse.find(doc.sha256, self._inputs(doc, result.spans), result.task.stored_id)

    def _same_passages(self, result: ReadFile) -> bool:
        """Whether a file read again by a newer reader gives the passages and sections it is stored with (then
        its vectors stand: the passage context is the index's, unchanged)."""
        if result.task.stored_id is None or result.document is None:
            return False
        sections = document_sections(result.document, result.spans)
        made = [(s.start, s.end, sec) for s, sec in zip(result.spans, sections, strict=True)]
        return made == self.stores.passage_layout(result.task.stored_id)

    def _embedded(self, n: int) -> None:
        """``n`` more passages came back from the encoder (called on the worker's thread too)."""
        with self._count_lock:
            self.embedded_now += n
            done = self.embedded_now
        if not self.progress:
            return
        if self.total is not None:
            self.progress(min(done, self.total), self.total)
        elif self.stages is not None:  # a distributed run learns its total as it goes
            self.progress(done, None)

    def _stage(self, text: str) -> None:
        """Tell the reporter what the run is doing, where it listens for that (``Progress``)."""
        stage = getattr(self.progress, "stage", None)
        if stage is not None:
            stage(text)

    def _fail(self, path: str, reason: str) -> None:
        self.summary.failed += 1
        self.summary.failures.append((path, reason))

    def _commit(self, group: list[tuple[_Pending, NewDocument]]) -> None:
        """Write ``group`` in one transaction, each document replacing its stored version. One bad file never
        costs the good files of its group: where the database refuses a document's data
        (``DataRejectedError``), the documents are written one by one, and a refused one is a failure with the
        database's reason, its indexed version kept."""

        def write(each: list[tuple[_Pending, NewDocument]]) -> None:
            replaced = [p.replaces for p, _ in each if p.replaces is not None]
            self.stores.write(remove=replaced, add=[item for _, item in each])
            self.summary.updated += len(replaced)
            self.summary.added += len(each) - len(replaced)

        def refused(one: tuple[_Pending, NewDocument], exc: DataRejectedError) -> None:
            kept = " (its indexed version is kept)" if one[0].replaces is not None else ""
            self._fail(one[0].document.path, f"{exc}{kept}")

        try:
            write(group)
            return
        except DataRejectedError as exc:
            if len(group) == 1:
                refused(group[0], exc)
                return
        for one in group:
            try:
                write([one])
            except DataRejectedError as exc:
                refused(one, exc)

    def _inputs(self, document: Document, spans: Sequence[Span], sections: list[str] | None = None) -> list[str]:
        """What the encoder is handed for ``document``'s passages (its section paths made here if not given)."""
        if sections is None:
            sections = document_sections(document, spans)
        return passage_inputs(document.text, spans, sections, self.context, self.limit)

    def _flush(self) -> None:
        if not self.pending:
            return
        sections = [document_sections(p.document, p.spans) for p in self.pending]
        todo = [(p, to_embed(self._inputs(p.document, p.spans, sec), p.reused))
                for p, sec in zip(self.pending, sections, strict=True) if p.vectors is None]
        texts = [t for _, own in todo for t in own]
        if texts and self.prefetch is not None:
            self.prefetch.wait()  # the encoder is the worker's until its jobs are done
        if texts:
            if not getattr(self.encoder, "is_loaded", True):
                self._stage("loading the model")
            # Encoded PROGRESS_GROUP at a time, with progress after each: a flush (or one large file, a 50 MB text
            # is some 126,000 passages and one commit) otherwise reported nothing until it was done. A text's vector
            # does not depend on its batch, so the groups change no vector.
            parts = []
            for at in range(0, len(texts), PROGRESS_GROUP):
                parts.append(self.encoder.encode(texts[at : at + PROGRESS_GROUP]))
                self._embedded(len(parts[-1]))
            vectors = np.concatenate(parts)
        else:
            vectors = np.zeros((0, 0), dtype=np.float32)
        row = 0
        for p, own in todo:
            p.vectors = vectors[row : row + len(own)]
            row += len(own)
        embedded = sum(len(p.vectors) for p in self.pending)  # type: ignore[arg-type]
        reused = sum(p.reused.count for p in self.pending if p.reused is not None)
        items = [
            NewDocument(p.document, p.spans,
                        p.reused.assemble(p.vectors) if p.reused is not None else p.vectors,  # type: ignore[arg-type]
                        sec, reader_version(p.document.path, p.document.source))
            for p, sec in zip(self.pending, sections, strict=True)
        ]
        # Kept vectors were recorded by the run that embedded them: a run that embeds none records nothing (and
        # never asks a model it did not load what it embeds with).
        if self.embedded_with is not None and embedded and not self.recorded:
            rows = Provenance.from_settings(self.stores.settings()).recording(self.embedded_with())
            if rows:
                self.stores.put_settings(rows)
            self.recorded = True
        self._commit(list(zip(self.pending, items, strict=True)))
        if self.stages is not None:  # a distributed run's workers embedded them: counted as they land
            self._embedded(embedded)
        self.summary.passages_embedded += embedded
        self.summary.passages_reused += reused
        self.pending, self.pending_passages = [], 0
        if time.monotonic() - self.last_save > SAVE_EVERY_S:
            self.stores.flush(final=False)
            self.last_save = time.monotonic()
