"""``Index``: the facade over one index (a folder, or a PostgreSQL schema): it opens or creates its stores, reads
its settings, builds its parts (encoder, ingest pipeline, query engine) and hands them down."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchapp.config import RUNTIME_SETTINGS, IndexConfig, check_names
from searchapp.encode.catalog import model_max_tokens
from searchapp.encode.device import usable
from searchapp.encode.encoder import LazyEncoder
from searchapp.encode.precision import check_precision
from searchapp.encode.provenance import EmbeddedWith
from searchapp.encode.spec import EncoderSpec
from searchapp.encode.tokenizer import ModelOffsets
from searchapp.errors import ConfigError, ReadOnlyError
from searchapp.ids import key_list
from searchapp.query.engine import QueryEngine
from searchapp.query.fusion import Fusion
from searchapp.query.options import SearchKwargs
from searchapp.reports import (
    CollectionListing,
    DocumentListing,
    IndexStats,
    collection_listing,
    document_listing,
    index_stats,
)
from searchapp.setting import DEFAULT_CONTEXT_CHARS, MAX_THREADS, seconds, whole
from searchapp.store.base import Stores
from searchapp.store.locate import display, index_exists, is_postgres, open_stores
from searchapp.store.rebuild import document_text, passage_context
from searchapp.types import DocumentText, EncoderLike, ExportedDocument, ExportedPassage, Hit, PassageContext

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from searchapp.ingest.distributed import RayStages
    from searchapp.ingest.options import IngestOptions
    from searchapp.ingest.pipeline import Ingest, IngestSummary, Progress, Record

# Settings of this process alone, never stored (``open_or_create``'s runtime knobs).
_KNOBS = ("batch_size", "threads", "lock_wait", "device")


class Index:
    """Open an index folder (``create=True`` makes it if missing).

    ``config`` gives the settings for a new index; for an existing one it must name the same encoder and
    splitter, or ``EncoderMismatchError`` / ``ConfigError`` is raised. ``encoder`` replaces the configured one
    (tests use a fake).

    The index builds its parts once and hands them down: the stores (``store/``), the encoder (loaded on first
    use), the splitter's settings; the ingest pipeline, the query engine and the evaluation runner work with
    those and never with the index.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ".searchapp",
        *,
        create: bool = False,
        config: IndexConfig | None = None,
        encoder: EncoderLike | None = None,
        precision: str | None = None,
        batch_size: int = 32,
        threads: int | None = None,
        read_only: bool = False,
        lock_wait: float = 0.0,
        device: str = "auto",
    ) -> None:
        if threads is not None:
            whole("threads", threads, ge=1, le=MAX_THREADS)
        whole("batch_size", batch_size, ge=1)
        self.location = os.fspath(path)
        self.path: Path | None = None if is_postgres(self.location) else Path(self.location)  # None: a database
        self.read_only = read_only
        self._batch_size = batch_size
        self._threads = threads
        # Where this process embeds (encode/device.py): a runtime knob, like threads; never stored. A GPU named
        # but missing is refused before anything is opened or created.
        self._device = usable(device)
        # Seconds a write waits for another process's writer lock before IndexLockedError (0: refused at once).
        self.lock_wait = seconds("lock_wait", lock_wait)
        self._encoder = LazyEncoder(self._make_encoder) if encoder is None else encoder
        self._query = LazyEncoder(self._make_query_encoder)  # chosen on the first query
        self.config = config or IndexConfig()  # replaced by the stored settings below, for an existing index
        self.stores: Stores = open_stores(self.location, self.config.vectors, self._dimension, read_only, create)
        rows: dict[str, str] = {}
        try:
            rows = self.stores.settings()
            if rows:
                self.config = IndexConfig.from_settings(rows)
                self.stores.policy = self.config.vectors
                if config is not None:
                    self.config.check_same(config)
            # The threshold in force, the backend's where the settings name none: stored with a new index, so a later
            # default never changes a made index's plan.
            self.config = self.config.with_vectors(self.stores.policy)
            # Runtime knobs of this process's encoder; the stored precision is the default.
            self._precision = check_precision(precision) if precision is not None else self.config.precision
            if not rows:
                self._check_new()
                self.stores.put_settings(self.config.to_settings())
        except BaseException:
            # Nothing half-made stays behind: a bad setting never leaves an index that cannot be opened again.
            if rows:
                self.stores.close()
            else:
                self.stores.discard()
            raise

    def _check_new(self) -> None:
        """Check a new index's settings against the real model before storing them: passage budget within the
        model's limit, pooling parameters valid for its depth (pooling a dummy batch records the dimension)."""
        limit, asked = model_max_tokens(self.config.model), self.config.splitter.max_tokens
        if asked > limit:
            raise ConfigError(f"max_tokens {asked} exceeds the limit of {self.config.model} ({limit} tokens)")
        if self.config.dimension == 0:
            self.config = self.config.with_dimension(self.encoder.dimension)

    @classmethod
    def open_or_create(
        cls,
        path: str | os.PathLike[str] = ".searchapp",
        *,
        encoder: EncoderLike | None = None,
        **settings: Any,
    ) -> Index:
        """Open the index at ``path``, or create it with ``settings`` (``IndexConfig`` settings by their flat
        names, e.g. ``max_tokens`` or ``alpha``, plus the runtime knobs ``batch_size``, ``threads``, ``lock_wait``
        and ``device``).

        A setting that is ``None`` means "as the index was built" (or the default for a new index); an encoder
        or splitter setting that differs from an existing index's raises ``EncoderMismatchError`` or
        ``ConfigError``; ``precision`` given for an existing index applies to this process only.
        """
        given = {k: v for k, v in settings.items() if v is not None}
        knobs = {k: given.pop(k) for k in _KNOBS if k in given}
        if not index_exists(os.fspath(path)):
            return cls(path, create=True, config=IndexConfig.from_flat(**given), encoder=encoder, **knobs)
        runtime = {k: given.pop(k) for k in RUNTIME_SETTINGS if k in given}
        check_names(given)
        index = cls(path, encoder=encoder, **runtime, **knobs)
        try:
            index.config.check_asked(given)
        except BaseException:
            index.close()
            raise
        return index

    # -- parts --------------------------------------------------------------------------------------------

    def _encoder_spec(self) -> EncoderSpec:
        """What this index embeds with: its model and pooling, this process's precision, batch, threads, device."""
        c = self.config
        return EncoderSpec(c.model, c.pooling, c.pooling_params, self._precision, self._batch_size, self._threads,
                           device=self._device)

    def _own_spec(self) -> EncoderSpec | None:
        """The spec that builds the index's encoder; ``None`` for an encoder given from outside."""
        return self._encoder_spec() if isinstance(self._encoder, LazyEncoder) else None

    def _make_encoder(self) -> EncoderLike:
        """The index's ingest encoder, as its spec chooses it (encode/spec.py: the ONNX graph for fp32 where it
        serves the pooling, else torch)."""
        return self._encoder_spec().build("ingest")

    @property
    def encoder(self) -> EncoderLike:
        """The index's encoder (loads the model on first use)."""
        enc = self._encoder
        return enc.loaded if isinstance(enc, LazyEncoder) else enc

    def _dimension(self) -> int:
        """The vectors' dimension, recorded in the settings the first time it is known (an index made before it
        was recorded at creation)."""
        if self.config.dimension == 0:
            self.config = self.config.with_dimension(self._encoder.dimension)
            if not self.read_only:
                self.stores.put_settings(self.config.to_settings())
        return self.config.dimension

    def _engine(self) -> QueryEngine:
        return QueryEngine(self.stores, lambda texts: self.query_encoder.encode(texts, truncate=True),
                           self.config.fusion)

    @property
    def query_encoder(self) -> EncoderLike:
        """What embeds queries (the server's, and ``searchapp eval``'s)."""
        return self._query.loaded

    def _make_query_encoder(self) -> EncoderLike:
        """The query encoder, as the spec chooses it next to the ingest encoder (encode/spec.py); an encoder
        given to the index embeds them itself."""
        enc = self._encoder
        return self._encoder_spec().query_encoder(enc) if isinstance(enc, LazyEncoder) else enc

    def warm_up(self) -> None:
        """Load what queries embed with now (the model, or its exported query graph), so that the first query is
        not the one that waits for it (``searchapp serve`` calls this at start unless ``--lazy``)."""
        self.query_encoder.encode(["warm up"], truncate=True)

    # -- writing --------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self, wait: bool = True) -> Iterator[None]:
        """Hold the index's write lock; a writer in another process is waited for up to ``lock_wait`` seconds
        (given when the index was opened; 0 by default), then ``IndexLockedError``; another thread of this process
        waits its turn (or, with ``wait=False``, gets ``IndexLockedError`` too)."""
        if self.read_only:
            raise ReadOnlyError(f"{display(self.location)}: this index was opened read-only")
        with self.stores.writing(wait, self.lock_wait):
            yield

    def _ingest(self, options: IngestOptions | None = None, progress: Progress | None = None,
                started: float | None = None, stages: RayStages | None = None) -> Ingest:
        """A run over this index's parts; what it embeds with is recorded just before its first vectors are
        written (encode/provenance.py): the workers' for a Ray run, else this process's encoder's."""
        # Imported by the writing calls alone: a query (a one-shot command) does not pay for the readers.
        from searchapp.ingest.pipeline import Ingest

        c = self.config
        embedded_with = partial(EmbeddedWith.of, self._encoder, self._own_spec())
        return Ingest(self.stores, self._encoder, c.splitter, ModelOffsets(c.model), options,
                      progress=progress, started=started, context=c.passage_context, limit=self._limit(),
                      stages=stages, embedded_with=stages.embedded_with if stages else embedded_with,
                      index_folder=None if self.path is None else str(self.path))

    def _limit(self) -> int:
        """The model's limit in word pieces (special tokens included): a passage and its context must fit in it."""
        return model_max_tokens(self.config.model)

    def ingest(
        self, root: str | os.PathLike[str] | IngestOptions, progress: Progress | None = None, **options: Any
    ) -> IngestSummary:
        """Index the files under ``root``: add new ones, replace changed ones, drop ones gone from it (and the
        indexed version of a file that holds no text any more). ``progress`` gets (passages embedded, to embed).

        ``options``: the fields of :class:`~searchapp.ingest.options.IngestOptions` by name (``include``,
        ``exclude``, ``within``, ``max_file_mb``, ``follow_links``, ``force``, ``workers``, ``actors``,
        ``gpus_per_actor``: documented there), checked before anything is done; or ``root`` is an
        ``IngestOptions`` made already (the CLI's). With ``workers="ray"`` (or ``ray:ADDRESS``) a Ray cluster
        loads, splits and embeds; this process still walks, detects changes and commits, under the writer lock.
        """
        # Timed from before the writer lock: catching up with other writers (a stale vector file rebuilt) is part
        # of the run.
        from searchapp.ingest.options import IngestOptions

        started = time.perf_counter()
        given = IngestOptions.of(root, **options)
        stages = None
        if given.ray is not None:
            from searchapp.ingest.distributed import RayStages

            stages = RayStages.start(given.ray, self._own_spec(), self.config.splitter, given.max_bytes,
                                     self.config.passage_context, self._limit())
        run = self._ingest(given, progress, started, stages)
        with self.writing():
            return self._after_run(run.run())

    def ingest_records(self, records: Iterable[Record]) -> IngestSummary:
        """Index in-memory documents ``(key, title, text[, metadata])``; unchanged keys are skipped (see ``Ingest``).
        A key must be a text id (``searchapp.ids.check_text_id``), else ``ConfigError``."""
        from searchapp.ingest.texts import checked_record

        run = self._ingest(started=time.perf_counter())
        with self.writing():
            return self._after_run(run.run_records(checked_record(r) for r in records))

    def _after_run(self, summary: IngestSummary) -> IngestSummary:
        """After a run that embedded passages, have the spec prepare what later processes embed with (the
        model's query graph, exported while its weights are loaded anyway, so later queries start without
        torch)."""
        if summary.passages_embedded and (spec := self._own_spec()) is not None:
            spec.prepare()
        return summary

    def add_texts(
        self,
        texts: Sequence[str],
        ids: Sequence[str] | None = None,
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        titles: Sequence[str] | None = None,
    ) -> IngestSummary:
        """Add texts as documents (split, embedded and stored like files), each with an id and a metadata dict.

        An id already held is replaced when its text changed; when only its metadata or title changed, they are
        updated without embedding again. ``ids`` default to :func:`~searchapp.ingest.texts.text_id` of each text.
        Raises ``ConfigError`` on an empty text, an empty or repeated id, an id that could pass for a file (an
        absolute path, a URL, a home path) or hides characters (white space at its ends, controls, zero-width or
        bidi characters: ``searchapp.ids``), or metadata that is not a JSON object (``searchapp.ingest.texts``).
        """
        from searchapp.ingest.texts import text_records

        return self.ingest_records(text_records(texts, ids, metadatas, titles))

    def remove(self, ids: Iterable[str], source: str | None = None) -> int:
        """Remove documents by text id or file path (only those of ``source``, ``"file"`` or ``"text"``, when
        given); returns how many there were (unknown ids are ignored)."""
        keys = key_list(ids)
        with self.writing():
            doc_ids = list(self.stores.document_ids(keys, source=source).values())
            self._drop(doc_ids)
        return len(doc_ids)

    def _drop(self, doc_ids: Sequence[int]) -> None:
        """Remove these documents (under the writer lock), if any."""
        if doc_ids:
            self.stores.write(remove=doc_ids, add=[])
            self.stores.flush()

    def remove_targets(self, targets: Sequence[str]) -> list[str]:
        """Remove what ``targets`` name (``ingest/targets.py``): a text id or a file's path exactly, and every
        file indexed under a folder, whether or not the folder still exists (a link to a file names the document
        indexed under the link's own path, never its target's). Returns the paths (or ids) removed, sorted."""
        if isinstance(targets, str) or not all(isinstance(t, str) and t for t in targets):
            raise ConfigError("targets must be a list of paths or ids (non-empty strings)")
        from searchapp.ingest.targets import named

        with self.writing():
            doomed = named(targets, self.stores.documents())
            self._drop(sorted(doomed.values()))
        return sorted(doomed)

    def set_fusion(self, fusion: Fusion) -> None:
        """Make ``fusion`` this index's hybrid default (e.g. after ``searchapp tune``)."""
        self.config = self.config.with_fusion(fusion)
        self.stores.put_settings(self.config.to_settings())

    # -- reading --------------------------------------------------------------------------------------

    def search(self, query: str, **options: Unpack[SearchKwargs]) -> list[Hit]:
        """Rank passages for ``query``: the best ``k`` (10) in ``mode`` ``hybrid`` (the default), ``dense`` or
        ``lexical``. The options are declared once, with their defaults, help and bounds: ``query/options.py``
        (``SearchKwargs``): ``filters`` (a :class:`searchapp.Filter` or its JSON form: only matching documents are
        ranked), ``explain`` (an :class:`~searchapp.types.Explanation` per hit), ``min_score`` (a cosine with the
        query, comparable across queries), ``offset`` (paging), ``group_by="document"``, and per-query overrides of
        the index's hybrid settings (``method``, ``norm``, ``alpha``, ``k0``, ...: ``query/fusion.Fusion``).
        Raises ``ConfigError`` for a query that is not a string, a bad option, filter or fusion setting.
        """
        if not isinstance(query, str):
            raise ConfigError(f"the query must be a string, got {type(query).__name__}")
        return self.search_batch([query], **options)[0]

    def search_batch(self, queries: Sequence[str], **options: Unpack[SearchKwargs]) -> list[list[Hit]]:
        """:meth:`search` for many queries, encoded in batches."""
        return self._engine().search_batch(queries, **options)

    def collections(self) -> list[CollectionListing]:
        """The named collections (``ingest(..., collection=NAME)``) with their descriptions and counts, by name."""
        return collection_listing(self.stores)

    def documents(self, offset: int = 0, limit: int | None = None,
                  collection: str | None = None) -> list[DocumentListing]:
        """The documents with their passage counts and collections, by path (or text id): a page (``offset``,
        ``limit``), of ``collection`` only where named (reports.document_listing)."""
        return document_listing(self.stores, offset, limit, collection)

    def export(self, vectors: bool = False) -> Iterator[ExportedDocument | ExportedPassage]:
        """Everything the index holds, streamed from one snapshot: every document (by path, or text id), then
        every passage (by id) with its span, text and, with ``vectors``, its stored vector. ``searchapp export``
        writes each as a JSON line (``to_dict()``; docs/cli.md)."""
        return self.stores.export(vectors)

    def document(self, path: str, start: int = 0, max_chars: int | None = None) -> DocumentText:
        """The text of the document with this path (or text id) from character ``start``, at most ``max_chars``
        characters of it (all by default), rebuilt from its passages (store/rebuild.py): the full text is not
        stored, and the whitespace between passages stands as spaces holding its line breaks (offsets and lines
        stay exact; where an older index did not record its passages' lines, spaces ending in a line break).

        Raises ``DocumentNotFoundError`` if there is no such document, ``ConfigError`` for a negative ``start`` or
        a ``max_chars`` below 1.
        """
        return document_text(self.stores, path, start, max_chars)

    def context(self, passage_id: int, chars: int = DEFAULT_CONTEXT_CHARS, lines: int | None = None) -> PassageContext:
        """A passage with up to ``chars`` characters of its document's text before and after it (rebuilt as in
        :meth:`document`); with ``lines``, of those only the rest of the passage's first and last lines and that
        many whole lines more on each side. Raises ``DocumentNotFoundError`` for an unknown passage id,
        ``ConfigError`` for a negative ``chars`` or ``lines``."""
        return passage_context(self.stores, passage_id, chars, lines)

    def is_empty(self) -> bool:
        """Whether the index holds no passage (cheap, unlike counting)."""
        return self.stores.is_empty()

    def stats(self) -> IndexStats:
        """Counts, settings, what embedded the vectors (encode/provenance.py) and size on disk."""
        shown = str(self.path.absolute()) if self.path else display(self.location)
        return index_stats(self.stores, self.config, shown)

    def use_lexical_engine(self, name: str) -> int:
        """Move a folder index to the lexical engine ``name`` (``fts5``, ``tantivy``), built from the stored
        passages; the passages indexed, 0 where it already used it (``ConfigError`` for PostgreSQL)."""
        return self.stores.use_lexical_engine(name, timeout=self.lock_wait)

    def close(self) -> None:
        """Release the database."""
        self.stores.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
