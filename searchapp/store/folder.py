"""The folder backend: SQLite (documents, passages with their vectors, settings, FTS5) and a FAISS file beside
it, kept in step.

SQLite is the record; the FAISS file is derived from it. On load the file's count and largest id are checked
against the database, and a missing or stale file (a crash between a commit and the file's write, or another
process's writes) is rebuilt from the stored vectors, straight into the kind of index its size calls for
(:class:`~searchapp.store.vector_policy.VectorPolicy`), without running the model.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Connection, text

from searchapp.errors import ConfigError, IndexLockedError, IndexNotFoundError, ReadOnlyError
from searchapp.filters import Filter
from searchapp.sqlite_driver import dbapi, library
from searchapp.store import lexical_index
from searchapp.store.base import Reader, Stores
from searchapp.store.filter_sql import Restrict, passages_sql
from searchapp.store.lexical_index import LexicalSession, SessionContext, engine
from searchapp.store.lock import FileLock
from searchapp.store.rows import Candidates, NewDocument, PassageRecord
from searchapp.store.sqlite import SqliteRecords, has_settings
from searchapp.store.tantivy_lexical import GENERATION_KEY
from searchapp.store.vector_policy import VectorPolicy, auto_nlist
from searchapp.types import COSINE_MIN, Run

if TYPE_CHECKING:
    from searchapp.store.vectors import VectorStore

DB_NAME = "index.db"
LEXICAL_ENGINE_KEY = "lexical_engine"  # the settings row naming the index's lexical engine
VECTORS_NAME = "vectors.faiss"
LOCK_NAME = "write.lock"
OWN_FOLDERS = lexical_index.ENGINE_FOLDERS  # beside the database: a lexical engine's (tantivy's index)

# From this many passage ids up, a query's lexical side is scored in parts at once, one per core (at most
# MAX_PARTS; one core fewer in a session that also searches an exact vector index): below it one part is about as
# fast, the hand-offs costing what the cores save (docs/performance.md, "Lexical scoring in parts").
PARALLEL_MIN = 100_000
MAX_PARTS = 4


class FolderStores(SqliteRecords, Stores):
    """The stores of an index folder: its database (the records) with its lexical index (tantivy's beside it,
    committed after the records' transactions, or FTS5's inside them) and what this class adds, the FAISS file
    derived from it and the writer's file lock.
    ``dimension`` is asked for when the vectors are first loaded (it may load the model); ``read_only`` never
    writes a file, not even a rebuilt vector file."""

    backend = "folder"
    private_settings = (GENERATION_KEY,)  # the tantivy engine's own bookkeeping, not a setting

    def __init__(
        self,
        folder: Path,
        policy: VectorPolicy,
        dimension: Callable[[], int],
        read_only: bool = False,
        made_folder: bool = False,
    ) -> None:
        self.folder = folder
        self._made_folder = made_folder
        self.policy = policy
        self.read_only = read_only
        self._dimension = dimension
        SqliteRecords.__init__(self, folder / DB_NAME, read_only)
        # The lexical engine is the index's, recorded when it was made: two engines never write one index.
        self.lexical_index = engine(self._lexical_engine_name(), folder)
        self.lock = FileLock(folder / LOCK_NAME)
        self._vectors: VectorStore | None = None
        self._load_mutex = threading.RLock()

    @classmethod
    def open(
        cls, folder: Path, policy: VectorPolicy, dimension: Callable[[], int], read_only: bool, create: bool
    ) -> FolderStores:
        """The stores of the index folder ``folder``; ``create`` makes the folder and database where there is no
        index (a database without settings is a creation that was interrupted: it is made again)."""
        made_folder = False
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"{folder} is a file, not an index folder")
        if not has_settings(folder / DB_NAME):
            if not create:
                raise IndexNotFoundError(
                    f"no index at {folder}: create one with `searchapp ingest FOLDER --index {folder}`"
                )
            made_folder = not folder.exists()
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(f"{folder}: cannot create index folder: {exc.strerror or exc}") from exc
        return cls(folder, policy, dimension, read_only=read_only, made_folder=made_folder)

    def _lexical_engine_name(self) -> str:
        """The engine recorded among the settings; an index made before engines were recorded is FTS5's, a new
        one gets the registry's default (recorded with its first settings: :meth:`put_settings`)."""
        rows = self.settings()
        if LEXICAL_ENGINE_KEY in rows:
            name = str(json.loads(rows[LEXICAL_ENGINE_KEY]))
            if name not in lexical_index.ENGINES:
                raise ConfigError(f"{self.folder}: this index's lexical engine {name!r} is not one this version "
                                  f"has ({', '.join(lexical_index.ENGINES)})")
            return name
        return "fts5" if rows else lexical_index.DEFAULT

    def put_settings(self, rows: Mapping[str, str]) -> None:
        """The settings rows, with the lexical engine's the first time any are stored."""
        if rows and LEXICAL_ENGINE_KEY not in self.settings():
            rows = {**rows, LEXICAL_ENGINE_KEY: json.dumps(self.lexical_index.name)}
        super().put_settings(rows)

    def use_lexical_engine(self, name: str, timeout: float = 0.0) -> int:
        """Move the index to the lexical engine ``name`` (an engine of ``lexical_index.ENGINES``), built from the
        stored passages under the writer lock; the number of passages it indexed (0 when it was already in use).
        The records switch in one transaction: a kill before it leaves the old engine answering, after it the
        new one (a leftover of the old is removed by running it again)."""
        if name not in lexical_index.ENGINES:
            raise ConfigError(f"no lexical engine {name!r}: one of {', '.join(lexical_index.ENGINES)}")
        if self.read_only:
            raise ReadOnlyError(f"{self.folder}: this index was opened read-only")
        with self.lock.hold(True, timeout):
            old = self.lexical_index
            if old.name == name:
                for other in lexical_index.ENGINES:  # what an interrupted switch left of another engine
                    if other != name:
                        engine(other, self.folder).retire()
                return 0
            new = engine(name, self.folder)
            n = new.build(self.connect, self.passage_texts)
            with self._begin() as conn:
                old.clear(conn)
                n += new.fill(conn, self.passage_texts)
                self._upsert_settings(conn, {LEXICAL_ENGINE_KEY: json.dumps(name)})
            self.lexical_index = new
            old.retire()
            return n

    def discard(self) -> None:
        self.close()
        for name in (DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm", LOCK_NAME):
            with contextlib.suppress(FileNotFoundError):
                (self.folder / name).unlink()
        if self._made_folder:
            with contextlib.suppress(OSError):
                self.folder.rmdir()

    # -- the vector file -----------------------------------------------------------------------------------

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

            store = VectorStore(self.folder / VECTORS_NAME, self._dimension(), nprobe=self.policy.nprobe)
            n, top = self.id_summary()
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
        n, top = self.id_summary()
        if store.count != n or (n and int(store.ids().max()) != top):
            self._vectors = None

    def refresh(self) -> None:
        """Reload the vector file if another process rewrote it since it was loaded (long-lived readers)."""
        store = self._vectors
        if store is not None and not self.lock.held and store.stamp != store.file_stamp():
            self._vectors = None

    def _rebuild(self, store: VectorStore, n: int) -> None:
        """Rebuild the vector store from the vectors SQLite holds, straight into the kind its size calls for."""
        dim = store.dimension
        if self.policy.approximate(n) and n:
            store.build_ivf(lambda: self.stored_vectors(dim), n, auto_nlist(n))
        else:
            store.rebuild(self.stored_vectors(dim))

    def _fit(self, store: VectorStore) -> None:
        """Convert, retrain or shrink the vector index as the policy says for its size."""
        n = store.count
        ivf = store.kind == "ivf"
        change = self.policy.refit(ivf, n, store.index.nlist if ivf else None)
        if change == "exact":
            store.to_flat()
        elif change == "approximate":
            store.to_ivf(auto_nlist(n))
        elif change == "retrain":
            self._rebuild(store, n)

    def flush(self, final: bool = True) -> None:
        """Persist the vector file if it changed (the caller holds the write lock), its kind first fitted to its
        size; the same now and then (other processes find the file current) as at the end."""
        if self._vectors is not None and self._vectors.dirty:
            self._fit(self._vectors)
            self._vectors.save()

    def _save_if_unlocked(self) -> None:
        if self.read_only:
            return  # a rebuilt store stays in memory; the file is left to writers
        if self.lock.held_here:
            self.flush()
            return
        # A reader that cannot write (locked by an ingest, or a read-only folder) keeps the rebuilt store in memory.
        # Never wait here: the thread holding the write lock may be waiting for this load.
        with contextlib.suppress(IndexLockedError, OSError), self.lock.hold(wait=False):
            self.flush()

    def vector_kind(self) -> str:
        """``flat`` or ``ivf``, read from the vector file without loading it into a store."""
        store = self._vectors
        if store is not None:
            return store.kind
        # FAISS files start with the index type's four-character code: no need to load gigabytes for status.
        try:
            with open(self.folder / VECTORS_NAME, "rb") as fh:
                return "ivf" if fh.read(4) == b"IwFl" else "flat"
        except OSError:
            return "flat"

    # -- writing -------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self, wait: bool = True, timeout: float = 0.0) -> Iterator[None]:
        with self.lock.hold(wait, timeout):
            self._drop_stale_vectors()
            # Checked against the database as it is before this writer adds anything.
            _ = self.vectors
            self.lexical_index.ready(self.connect, self.passage_texts, "write")
            yield

    def lexical_ready(self) -> None:
        """The lexical index current with the records before a read: caught up on disk where this process may
        take the writer lock (without waiting), else read as another process's writer keeps it, or, in a folder
        this process cannot write, in memory."""
        if self.read_only:
            self.lexical_index.ready(self.connect, self.passage_texts, "read")
        elif self.lock.held_here:
            self.lexical_index.ready(self.connect, self.passage_texts, "write")
        else:
            try:
                with self.lock.hold(wait=False):
                    self.lexical_index.ready(self.connect, self.passage_texts, "write")
            except (IndexLockedError, OSError):
                self.lexical_index.ready(self.connect, self.passage_texts, "busy")

    def write(self, remove: Sequence[int], add: Sequence[NewDocument]) -> None:
        """SQLite (and the lexical index, in or just after its transaction), then FAISS in memory (written out by
        :meth:`flush`; a crash before that leaves a stale file, rebuilt on the next load)."""
        vectors = self.vectors
        removed_ids, added_ids = self.write_rows(remove, add)
        vectors.remove(removed_ids)
        for item, ids in zip(add, added_ids, strict=True):
            vectors.add(ids, np.asarray(item.vectors))

    # -- reading -------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def reader(self, flt: Filter | None = None, dense: bool = True) -> Iterator[FolderReader]:
        """A read session; on a large index with several cores its lexical searches take a connection per part."""
        if dense:
            self.refresh()
        with contextlib.ExitStack() as stack:
            conn = stack.enter_context(self.connect())
            # An exact dense search (up to the IVF threshold) is a hybrid query's long pole and takes a core of
            # its own; an IVF one probes few lists, so there the lexical side is the long pole and takes every core
            # (docs/performance.md, "Query path on an AVX2 CPU").
            exact = dense and self.vector_kind() == "flat"
            yield FolderReader(self, conn, flt, dense, stack, min(_cores() - (1 if exact else 0), MAX_PARTS))

    def facts(self) -> dict[str, object]:
        """The SQLite library the index is read and written through and its version (``sqlite_driver``), the
        lexical engine and the bytes its data take."""
        with self.connect() as conn:
            lexical_bytes = self.lexical_index.size(conn)
        return {"sqlite_library": library(), "sqlite_version": dbapi().sqlite_version,
                "lexical_engine": self.lexical_index.name, "lexical_bytes": lexical_bytes}

    def disk_bytes(self) -> int:
        size = 0
        for f in self.folder.iterdir():
            with contextlib.suppress(FileNotFoundError):  # a temporary file renamed away meanwhile
                size += f.stat().st_size if f.is_file() else 0
        return size


class FolderReader(Reader):
    """A read session on one SQLite connection; a filter becomes SQL for FTS5 and an id selector for FAISS."""

    def __init__(
        self,
        stores: FolderStores,
        conn: Connection,
        flt: Filter | None,
        dense: bool,
        stack: contextlib.ExitStack | None = None,
        max_parts: int = 1,
    ) -> None:
        self.stores = stores
        self.conn = conn
        self._stack = stack  # holds the other parts' connections for the session
        self._max_parts = max_parts if stack is not None else 1
        self.restrict: Restrict | None = None
        self.allowed: np.ndarray | None = None  # int64 (m,): the passages a filtered dense search may return
        if flt is not None and not flt.empty:
            self.restrict = passages_sql(flt)
            if dense:
                self.allowed = np.fromiter(conn.execute(text(self.restrict[0]), self.restrict[1]).scalars(),
                                           dtype=np.int64)

    @cached_property
    def lexical_side(self) -> LexicalSession:
        """The session's lexical side, by the stores' lexical index (``store/lexical_index.py``); on a large index
        with several cores it scores a query in parts, a connection each."""
        self.stores.lexical_ready()
        context = SessionContext(self.conn, self.restrict, self.stores.connect, self._stack, self._max_parts,
                                 PARALLEL_MIN, _worker)
        return self.stores.lexical_index.session(context)

    @property
    def parts(self) -> list[Any]:
        """The FTS5 side's parts (``lexical.Fts5Session.parts``): what the tests of scoring in parts look at."""
        return self.lexical_side.parts  # type: ignore[attr-defined, no-any-return]

    def lexical(self, query: str, k: int) -> Run:
        return self.lexical_side.search(query, k)

    def dense(self, qvec: np.ndarray, k: int) -> Run:
        return self.stores.vectors.search(qvec, k, self.allowed)

    def gather(self, query: str, qvec: np.ndarray, k0: int) -> Candidates:
        """The dense search runs on a worker thread while FTS5 scores the query's matches (in parts on a large
        index) into temporary tables (both release the GIL), so a hybrid query costs about the slower side, not
        the sum; the dense candidates' BM25 scores are then keyed lookups among the materialised matches."""
        store = self.stores.vectors
        pending = _worker().submit(store.search, qvec, k0, self.allowed)
        try:
            with self.lexical_side.matches(query, k0) as matches:
                dense = dict(pending.result())
                known = matches.scores(list(dense))
        finally:
            pending.cancel()
        lex = dict(matches.top)
        for pid, score in known.items():
            lex.setdefault(pid, score)
        dense.update(store.scores(qvec, [pid for pid in lex if pid not in dense]))
        for pid in lex:  # a candidate with no stored vector cannot rank above any real one
            dense.setdefault(pid, COSINE_MIN)
        return Candidates(query, dense, lex)

    def hydrate(self, ids: Sequence[int]) -> dict[int, PassageRecord]:
        return self.stores.hydrate(ids, self.conn)

    def documents_of(self, ids: Sequence[int]) -> dict[int, int]:
        return self.stores.documents_of(ids, self.conn)

    def term_idf(self, query: str) -> dict[str, float]:
        return self.lexical_side.idf(query)


_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()


def _worker() -> ThreadPoolExecutor:
    """The threads queries hand work to: a hybrid query's dense search, and the lexical parts after the first
    (MAX_PARTS threads: a dense search and the other parts of one query all at once)."""
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(max_workers=MAX_PARTS, thread_name_prefix="searchapp-query"))
        return _POOL[0]


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1
