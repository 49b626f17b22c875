"""``Index``: a self-describing folder holding the database, the vector file and a write lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

import numpy as np

from searchapp.config import IndexConfig
from searchapp.encode.models import model_max_tokens
from searchapp.encode.precision import check_precision
from searchapp.encode.tokenizer import load_tokenizer, token_offsets
from searchapp.errors import ConfigError, IndexLockedError, IndexNotFoundError
from searchapp.store.metadata import MetadataStore

if TYPE_CHECKING:
    from searchapp.ingest.pipeline import IngestSummary, Progress
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
    ) -> None:
        self.path = Path(path)
        db = self.path / DB_NAME
        made_folder = False
        if not db.exists():
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
        if not (Path(path) / DB_NAME).exists():
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
        if self._vectors is None:
            from searchapp.store.vectors import VectorStore

            if self.config.dimension == 0:
                self.config = self.config.with_dimension(self.encoder.dimension)
                self.meta.put_settings(self.config.to_settings())
            store = VectorStore(self.path / VECTORS_NAME, self.config.dimension, nprobe=self.config.nprobe)
            n, top = self.meta.id_summary()
            ids = store.ids()
            if store.count != n or (n and int(ids.max()) != top):
                store.rebuild(self.meta.vectors(self.config.dimension))
                self._convert_if_large(store)
            self._vectors = store
            if store.dirty:
                self._save_if_unlocked()
        return self._vectors

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
    def writing(self) -> Iterator[None]:
        """Hold the index's write lock; a second writer gets ``IndexLockedError`` at once."""
        fh = open(self.path / LOCK_NAME, "a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            fh.close()
            raise IndexLockedError(f"{self.path}: another process is writing to this index") from exc
        self._lock = fh
        try:
            yield
        finally:
            self._lock = None
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            fh.close()

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

    def ingest_records(self, records: Iterable[tuple[str, str, str]]) -> IngestSummary:
        """Index in-memory documents ``(key, title, text)``; unchanged keys are skipped (see ``Ingest``)."""
        from searchapp.ingest.pipeline import Ingest

        with self.writing():
            return Ingest(self).run_records(records)

    def set_fusion(self, fusion: Fusion) -> None:
        """Make ``fusion`` this index's hybrid default (e.g. after ``searchapp tune``)."""
        self.config = self.config.with_fusion(fusion)
        self.meta.put_settings(self.config.to_settings())

    def save_vectors(self) -> None:
        """Persist the vector file if it changed (the caller holds the write lock), switching to the
        approximate index first when the index has grown past the threshold."""
        if self._vectors is not None and self._vectors.dirty:
            self._convert_if_large(self._vectors)
            self._vectors.save()

    def _convert_if_large(self, store: VectorStore) -> None:
        from searchapp.store.vectors import auto_nlist

        want_ivf = self.config.vector_index == "ivf" or (
            self.config.vector_index == "auto" and store.count >= self.config.ivf_threshold
        )
        if want_ivf and store.kind == "flat" and store.count:
            store.to_ivf(auto_nlist(store.count))

    def _save_if_unlocked(self) -> None:
        if self._lock is not None:
            self.save_vectors()
            return
        # A reader that cannot write (locked by an ingest, or a read-only folder) keeps the rebuilt store in memory.
        with contextlib.suppress(IndexLockedError, OSError), self.writing():
            self.save_vectors()

    # -- reading --------------------------------------------------------------------------------------

    def search(self, query: str, k: int = 10, mode: str = "hybrid", **fusion: Any) -> list[Hit]:
        """Rank passages for ``query`` (``hybrid``, ``dense`` or ``lexical``).

        ``fusion`` overrides the index's hybrid settings for this query: ``method`` (adaptive, convex, rrf),
        ``norm`` (theoretical, minmax, zscore), ``alpha``, ``rrf_k``, ``k0``.
        """
        from searchapp.query.engine import search

        return search(self, query, k=k, mode=mode, **fusion)

    def search_batch(self, queries: Sequence[str], k: int = 10, mode: str = "hybrid", **fusion: Any) -> list[list[Hit]]:
        """:meth:`search` for many queries, encoded in batches."""
        from searchapp.query.engine import search_batch

        return search_batch(self, queries, k=k, mode=mode, **fusion)

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
