"""``Index``: a self-describing folder holding the database, the vector file and a write lock."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

import numpy as np

from searchapp.config import IndexConfig
from searchapp.encode.models import model_max_tokens
from searchapp.encode.precision import check_precision
from searchapp.encode.tokenizer import load_tokenizer, token_offsets
from searchapp.errors import ConfigError, IndexLockedError, IndexNotFoundError
from searchapp.store.metadata import MetadataStore, has_settings

if TYPE_CHECKING:
    from searchapp.ingest.pipeline import IngestSummary, Progress, Record
    from searchapp.query.filters import Filter
    from searchapp.query.fusion import Fusion
    from searchapp.store.vectors import VectorStore
    from searchapp.types import Hit

DB_NAME = "index.db"
VECTORS_NAME = "vectors.faiss"
LOCK_NAME = "write.lock"
_ENCODER_KEYS = ("model", "pooling", "pooling_params")
# Settings that may differ from run to run without making vectors incomparable (bf16 and fp32 vectors of the
# same model agree to a cosine of 0.9999): given for an existing index, they apply to this process only.
_RUNTIME_KEYS = ("precision",)


class EncoderLike(Protocol):
    """What the index needs of an encoder (tests pass a deterministic fake)."""

    @property
    def dimension(self) -> int: ...

    def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray: ...


@dataclass(frozen=True)
class IndexStats:
    """What ``searchapp status`` reports."""

    path: str
    documents: int
    passages: int
    model: str
    pooling: str
    pooling_params: dict[str, Any]
    dimension: int
    max_tokens: int
    fusion: str
    norm: str
    alpha: float
    k0: int
    vector_index: str
    disk_bytes: int

    def to_dict(self) -> dict[str, object]:
        """The stable JSON form documented in docs/cli.md."""
        return dict(self.__dict__)


class Index:
    """Open an index folder (``create=True`` makes it if missing).

    ``config`` gives the settings for a new index; for an existing one it must name the same encoder and
    splitter, or ``EncoderMismatchError`` / ``ConfigError`` is raised. ``encoder`` replaces the configured one
    (tests use a fake).
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
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        db = self.path / DB_NAME
        made_folder = False
        if not has_settings(db):  # no database, or one whose creation was interrupted
            if not create:
                raise IndexNotFoundError(
                    f"no index at {self.path}: create one with `searchapp ingest FOLDER --index {self.path}`"
                )
            made_folder = not self.path.exists()
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(f"{self.path}: cannot create index folder: {exc.strerror or exc}") from exc
        self._encoder = encoder
        self._batch_size = batch_size
        self._threads = threads
        self._vectors: VectorStore | None = None
        self._lock: IO[str] | None = None
        self._lock_owner: int | None = None
        # Threads of one process (a server's) take turns to write, and to load the vector file, instead of
        # failing on the file lock their own process holds.
        self._write_mutex = threading.Lock()
        self._load_mutex = threading.RLock()
        self.meta = MetadataStore(db)
        rows: dict[str, str] = {}
        try:
            rows = self.meta.settings()
            if rows:
                self.config = IndexConfig.from_settings(rows)
                if config is not None:
                    self.config.check_encoder(config.model, config.pooling, config.pooling_params)
                    if config.splitter != self.config.splitter:
                        raise ConfigError(
                            f"this index splits passages with {self.config.splitter}; asked {config.splitter}"
                        )
            else:
                self.config = config or IndexConfig()
            # Runtime knobs of this process's encoder; the stored precision is the default.
            self._precision = check_precision(precision) if precision is not None else self.config.precision
            if not rows:
                self._check_new()
                self.meta.put_settings(self.config.to_settings())
        except BaseException:
            # Nothing half-made stays behind: a bad setting never leaves an index that cannot be opened again.
            self.meta.close()
            if not rows:
                for name in (DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm", LOCK_NAME):
                    with contextlib.suppress(FileNotFoundError):
                        (self.path / name).unlink()
                if made_folder:
                    with contextlib.suppress(OSError):
                        self.path.rmdir()
            raise

    def _check_new(self) -> None:
        """Check a new index's settings against the real model before storing them: passage budget within the
        model's limit, pooling parameters valid for its depth (pooling a dummy batch records the dimension)."""
        limit = model_max_tokens(self.config.model)
        if self.config.max_tokens > limit:
            raise ConfigError(
                f"max_tokens {self.config.max_tokens} exceeds the limit of {self.config.model} ({limit} tokens)"
            )
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
        """Open the index at ``path``, or create it with ``settings`` (``IndexConfig`` fields, plus the runtime
        knobs ``batch_size`` and ``threads``).

        A setting that is ``None`` means "as the index was built" (or the default for a new index); an encoder
        or splitter setting that differs from an existing index's raises ``EncoderMismatchError`` or
        ``ConfigError``; ``precision`` given for an existing index applies to this process only.
        """
        given = {k: v for k, v in settings.items() if v is not None}
        knobs = {k: given.pop(k) for k in ("batch_size", "threads") if k in given}
        if not has_settings(Path(path) / DB_NAME):
            return cls(path, create=True, config=IndexConfig(**given), encoder=encoder, **knobs)
        runtime = {k: given.pop(k) for k in _RUNTIME_KEYS if k in given}
        index = cls(path, encoder=encoder, **runtime, **knobs)
        built = index.config
        try:
            built.check_encoder(given.get("model"), given.get("pooling"), given.get("pooling_params"))
            differ = [k for k, v in given.items() if k not in _ENCODER_KEYS and getattr(built, k) != v]
            if differ:
                raise ConfigError(
                    "this index was built with "
                    + ", ".join(f"{k}={getattr(built, k)!r} (asked {given[k]!r})" for k in differ)
                )
        except BaseException:
            index.close()
            raise
        return index

    # -- parts, loaded on first use -------------------------------------------------------------------

    @property
    def encoder(self) -> EncoderLike:
        """The index's encoder (loads the model on first use)."""
        if self._encoder is None:
            from searchapp.encode.encoder import Encoder

            c = self.config
            self._encoder = Encoder(
                model=c.model, pooling=c.pooling, pooling_params=c.pooling_params, batch_size=self._batch_size,
                threads=self._threads, precision=self._precision,
            )
        return self._encoder

    @property
    def vectors(self) -> VectorStore:
        """The FAISS store, rebuilt from the database if the file is missing or stale."""
        store = self._vectors
        if store is not None:
            return store
        with self._load_mutex:
            return self._load_vectors()

    def _load_vectors(self) -> VectorStore:
        if self._vectors is None:
            from searchapp.store.vectors import VectorStore

            if self.config.dimension == 0:
                self.config = self.config.with_dimension(self.encoder.dimension)
                if not self.read_only:
                    self.meta.put_settings(self.config.to_settings())
            store = VectorStore(self.path / VECTORS_NAME, self.config.dimension, nprobe=self.config.nprobe)
            n, top = self.meta.id_summary()
            ids = store.ids()
            if store.count != n or (n and int(ids.max()) != top):
                self._rebuild(store, n)
            self._vectors = store
            if store.dirty:
                self._save_if_unlocked()
        return self._vectors

    def _drop_stale_vectors(self) -> None:
        """With the write lock just taken: forget a loaded vector store that another process's writes have
        outdated (file rewritten, or rows committed it never saw), so this writer reloads and checks it
        instead of adding to an old copy and saving that over the newer file."""
        store = self._vectors
        if store is None:
            return
        if store.stamp != store.file_stamp():
            self._vectors = None
            return
        n, top = self.meta.id_summary()
        if store.count != n or (n and int(store.ids().max()) != top):
            self._vectors = None

    def refresh_vectors(self) -> None:
        """Reload the vector file if another process rewrote it since it was loaded (long-lived readers)."""
        store = self._vectors
        if store is not None and self._lock is None and store.stamp != store.file_stamp():
            self._vectors = None

    def offsets(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        """Word-piece character offsets of ``texts`` with the model's tokenizer (for the splitter)."""
        return token_offsets(load_tokenizer(self.config.model), texts)

    # -- writing --------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self, wait: bool = True) -> Iterator[None]:
        """Hold the index's write lock; a writer in another process gets ``IndexLockedError`` at once, another
        thread of this process waits its turn (or, with ``wait=False``, gets ``IndexLockedError`` too)."""
        if self.read_only:
            raise ConfigError(f"{self.path}: this index was opened read-only")
        if not self._write_mutex.acquire(blocking=wait):
            raise IndexLockedError(f"{self.path}: another thread is writing to this index")
        try:
            fh = open(self.path / LOCK_NAME, "a+")
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                fh.close()
                raise IndexLockedError(f"{self.path}: another process is writing to this index") from exc
            self._lock, self._lock_owner = fh, threading.get_ident()
            self._drop_stale_vectors()
            try:
                yield
            finally:
                self._lock, self._lock_owner = None, None
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
                fh.close()
        finally:
            self._write_mutex.release()

    def ingest(
        self,
        root: str | os.PathLike[str],
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        progress: Progress | None = None,
    ) -> IngestSummary:
        """Index the files under ``root``: add new ones, replace changed ones, drop ones gone from it."""
        from searchapp.ingest.pipeline import Ingest

        with self.writing():
            return Ingest(self, progress).run(Path(root), include, exclude)

    def ingest_records(self, records: Iterable[Record]) -> IngestSummary:
        """Index in-memory documents ``(key, title, text[, metadata])``; unchanged keys are skipped (see ``Ingest``)."""
        from searchapp.ingest.pipeline import Ingest

        with self.writing():
            return Ingest(self).run_records(records)

    def add_texts(
        self,
        texts: Sequence[str],
        ids: Sequence[str] | None = None,
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        titles: Sequence[str] | None = None,
    ) -> IngestSummary:
        """Add texts as documents (split, embedded and stored like files), each with an id and a metadata dict.

        An id already held is replaced when its text changed; when only its metadata or title changed, they are
        updated without embedding again. ``ids`` default to :func:`text_id` of each text. Raises ``ConfigError``
        on an empty text, an empty or repeated id, an id that names an ingested file, or metadata that is not a
        JSON object.
        """
        keys = list(ids) if ids is not None else [text_id(t) for t in texts]
        metas = list(metadatas) if metadatas is not None else [{} for _ in texts]
        names = list(titles) if titles is not None else list(keys)
        if not len(keys) == len(metas) == len(names) == len(texts):
            raise ConfigError("texts, ids, metadatas and titles must have the same length")
        _check_texts(texts, keys, metas)
        files = self.meta.document_ids(keys, source="file")
        if files:
            raise ConfigError(f"id {next(iter(files))!r} names an ingested file: choose another id")
        return self.ingest_records(zip(keys, names, texts, metas, strict=True))

    def remove(self, ids: Iterable[str]) -> int:
        """Remove documents by text id or file path; returns how many there were (unknown ids are ignored)."""
        keys = list(dict.fromkeys(ids))
        with self.writing():
            _ = self.vectors  # checked against the database before this writes
            doc_ids = list(self.meta.document_ids(keys).values())
            if doc_ids:
                removed, _ = self.meta.write(remove=doc_ids, add=[])
                self.vectors.remove(removed)
                self.save_vectors()
        return len(doc_ids)

    def set_fusion(self, fusion: Fusion) -> None:
        """Make ``fusion`` this index's hybrid default (e.g. after ``searchapp tune``)."""
        self.config = self.config.with_fusion(fusion)
        self.meta.put_settings(self.config.to_settings())

    def save_vectors(self) -> None:
        """Persist the vector file if it changed (the caller holds the write lock), first fitting the kind of
        vector index to its size (:meth:`_fit_vector_index`)."""
        if self._vectors is not None and self._vectors.dirty:
            self._fit_vector_index(self._vectors)
            self._vectors.save()

    def _want_ivf(self, n: int) -> bool:
        kind = self.config.vector_index
        return kind == "ivf" or (kind == "auto" and n >= self.config.ivf_threshold)

    def _rebuild(self, store: VectorStore, n: int) -> None:
        """Rebuild the vector store from the vectors SQLite holds, straight into the kind its size calls for."""
        from searchapp.store.vectors import auto_nlist

        dim = self.config.dimension
        if self._want_ivf(n) and n:
            store.build_ivf(lambda: self.meta.vectors(dim), n, auto_nlist(n))
        else:
            store.rebuild(self.meta.vectors(dim))

    def _fit_vector_index(self, store: VectorStore) -> None:
        """Exact below the threshold, IVF above it; an IVF index is retrained (from SQLite's vectors, no model
        run) once the index has grown fourfold since training, when the right number of lists has doubled, and
        goes back to exact when an automatic one shrinks below half the threshold (the gap stops a size near
        the threshold from flipping back and forth)."""
        from searchapp.store.vectors import auto_nlist

        n, kind = store.count, self.config.vector_index
        if store.kind == "flat":
            if n and self._want_ivf(n):
                store.to_ivf(auto_nlist(n))
        elif kind == "flat" or (kind == "auto" and n < self.config.ivf_threshold // 2):
            store.to_flat()
        elif auto_nlist(n) >= 2 * store.index.nlist:
            self._rebuild(store, n)

    def _save_if_unlocked(self) -> None:
        if self.read_only:
            return  # a rebuilt store stays in memory; the file is left to writers
        if self._lock_owner == threading.get_ident():
            self.save_vectors()
            return
        # A reader that cannot write (locked by an ingest, or a read-only folder) keeps the rebuilt store in memory.
        # Never wait here: the thread holding the write lock may be waiting for this load.
        with contextlib.suppress(IndexLockedError, OSError), self.writing(wait=False):
            self.save_vectors()

    # -- reading --------------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        k: int = 10,
        mode: str = "hybrid",
        filters: Filter | Mapping[str, Any] | None = None,
        **fusion: Any,
    ) -> list[Hit]:
        """Rank passages for ``query`` (``hybrid``, ``dense`` or ``lexical``).

        ``filters``: a :class:`searchapp.Filter` or its JSON form ``{"metadata": {key: value or [values]},
        "path_prefix": str, "path_glob": str}``; only matching documents are ranked. ``fusion`` overrides the
        index's hybrid settings for this query: ``method`` (adaptive, convex, rrf), ``norm`` (theoretical,
        minmax, zscore), ``alpha``, ``rrf_k``, ``k0``.
        """
        from searchapp.query.engine import search

        return search(self, query, k=k, mode=mode, filters=filters, **fusion)

    def search_batch(
        self,
        queries: Sequence[str],
        k: int = 10,
        mode: str = "hybrid",
        filters: Filter | Mapping[str, Any] | None = None,
        **fusion: Any,
    ) -> list[list[Hit]]:
        """:meth:`search` for many queries, encoded in batches."""
        from searchapp.query.engine import search_batch

        return search_batch(self, queries, k=k, mode=mode, filters=filters, **fusion)

    def stats(self) -> IndexStats:
        """Counts, encoder and size on disk."""
        docs, passages = self.meta.counts()
        c = self.config
        size = 0
        for f in self.path.iterdir():
            with contextlib.suppress(FileNotFoundError):  # a temporary file renamed away meanwhile
                size += f.stat().st_size if f.is_file() else 0
        return IndexStats(
            path=str(self.path.absolute()), documents=docs, passages=passages, model=c.model,
            pooling=c.pooling, pooling_params=c.pooling_params, dimension=c.dimension,
            max_tokens=c.max_tokens, fusion=c.fusion, norm=c.norm, alpha=c.alpha, k0=c.k0,
            vector_index=self._vector_kind(), disk_bytes=size,
        )

    def _vector_kind(self) -> str:
        """``flat`` or ``ivf``, read from the vector file without loading it into a store."""
        store = self._vectors
        if store is not None:
            return store.kind
        # FAISS files start with the index type's four-character code: no need to load gigabytes for status.
        try:
            with open(self.path / VECTORS_NAME, "rb") as fh:
                return "ivf" if fh.read(4) == b"IwFl" else "flat"
        except OSError:
            return "flat"

    def close(self) -> None:
        """Release the database."""
        self.meta.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def text_id(text: str) -> str:
    """The default id of an added text: the first 32 hex digits of its SHA-256, so adding it again is a no-op."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _check_texts(texts: Sequence[str], keys: Sequence[str], metas: Sequence[Mapping[str, Any]]) -> None:
    for i, (text, key, meta) in enumerate(zip(texts, keys, metas, strict=True)):
        if not isinstance(key, str) or not key.strip():
            raise ConfigError(f"text {i}: the id must be a non-empty string")
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"text {key!r}: empty text")
        if not isinstance(meta, Mapping):
            raise ConfigError(f"text {key!r}: metadata must be a JSON object")
        try:
            json.dumps(dict(meta), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"text {key!r}: metadata is not JSON: {exc}") from exc
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if list(keys).count(k) > 1)
        raise ConfigError(f"id {dup!r} is given twice")
