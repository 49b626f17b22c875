"""``PostgresStores``: an index held in a PostgreSQL schema. Opening it (schema, extensions, migrations, what the
server allows), the writer's advisory lock and what a write session keeps up (the vector column's type, the BM25
index deferred over a first load and rebuilt after deletes, the HNSW index fitted to the size), the record hooks
of ``Records`` on PostgreSQL, and read sessions on connections that postdate the last BM25 rebuild."""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Table,
    any_,
    bindparam,
    func,
    select,
    text,
)
from sqlalchemy import Sequence as DbSequence
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.exc import DataError, DBAPIError, OperationalError

from searchapp.analysis import ANALYSIS
from searchapp.errors import (
    ConfigError,
    DataRejectedError,
    IndexLockedError,
    IndexNotFoundError,
    ReadOnlyError,
    SchemaError,
    StorageError,
)
from searchapp.extras import missing
from searchapp.filters import Filter
from searchapp.store import schema as migrations
from searchapp.store.base import Stores
from searchapp.store.lock import locked_message, retry
from searchapp.store.masking import hide_password
from searchapp.store.postgres import ddl, server
from searchapp.store.postgres.connections import GENERATION_KEY, fresh_connection, make_engines, track_generation
from searchapp.store.postgres.copy_in import copy_rows
from searchapp.store.postgres.ddl import BM25_INDEX, HNSW_INDEX
from searchapp.store.postgres.location import (
    build_settings_of,
    display_location,
    parse_location,
    pool_size_of,
    vector_type_of,
)
from searchapp.store.postgres.reader import PostgresReader
from searchapp.store.postgres.vector import PgVector
from searchapp.store.records import Records
from searchapp.store.rows import NewDocument
from searchapp.store.tables import tables
from searchapp.store.vector_policy import VectorPolicy

# A settings row (not an IndexConfig setting): passages deleted since the BM25 index was last rebuilt.
_STALE_KEY = "bm25_deleted_passages"
# The relations an index's schema holds (tables.py, and Alembic's revision): any other is another application's.
_OWN_RELATIONS = frozenset({"settings", "documents", "passages", "passages_lexical", "collection_counts",
                            "alembic_version"})


class PostgresStores(Records, Stores):
    """The stores of an index held in a PostgreSQL schema.

    ``create``: make the schema (and the extensions, if missing) when it holds no index yet; otherwise a missing
    index raises ``IndexNotFoundError``. ``dimension`` is asked for when the vector column is first typed.
    """

    backend = "postgresql"
    tables = tables("postgresql", PgVector)
    private_settings = (_STALE_KEY, GENERATION_KEY)

    def __init__(
        self,
        location: str,
        policy: VectorPolicy,
        dimension: Callable[[], int],
        read_only: bool = False,
        create: bool = False,
    ) -> None:
        self.location = display_location(location)
        self._given = location  # to mask its password in the server's messages (_reason)
        self.url, self.schema = parse_location(location)
        self.policy = policy
        self.read_only = read_only
        self._dimension = dimension
        self._made_schema = False
        self.read_only_reason: str | None = None
        self.versions: dict[str, str | None] = {}
        self.asked_vector_type = vector_type_of(location)
        self.vector_type = self.asked_vector_type or "vector"
        self.build_settings = build_settings_of(location)
        self._bm25_deferred = False
        self._mutex = threading.Lock()
        self.q = ddl.quoted(self.schema)
        # Advisory locks are per database already: the schema names the index within it.
        self.lock_key = int.from_bytes(hashlib.sha256(f"searchapp:{self.schema}".encode()).digest()[:8], "big",
                                       signed=True)
        try:
            import psycopg  # noqa: F401 - only to say what is missing before SQLAlchemy does
        except ImportError as exc:
            raise missing("postgres", "PostgreSQL indexes", exc) from exc
        self.engine, self.write_engine = make_engines(self.url, self.schema, pool_size_of(location))
        track_generation(self.engine, self.tables.settings)
        try:
            self._open(create)
        except BaseException:
            self.close()
            raise

    def _reason(self, exc: DBAPIError) -> str:
        """The first line of the server's or the driver's message, the URL's password masked (a host name
        or a user read from a malformed URL may carry part of it)."""
        return hide_password(server.reason(exc), self._given)

    # -- opening ---------------------------------------------------------------------------------------------

    def _open(self, create: bool) -> None:
        try:
            with self.engine.connect() as conn:
                exists = conn.execute(
                    text("SELECT to_regclass(:t) IS NOT NULL"), {"t": f"{self.q}.settings"}
                ).scalar_one()
                has_rows = exists and conn.execute(select(self.tables.settings.c.key).limit(1)).first() is not None
                others = sorted(set(conn.execute(text(
                    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = :s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"), {"s": self.schema}
                ).scalars()) - _OWN_RELATIONS)
                self.versions = self._read_versions(conn)
                self.read_only_reason = server.read_only_reason(conn, f"{self.q}.passages", exists)
        except DBAPIError as exc:  # not only OperationalError: a parameter the server refuses is another kind
            raise ConfigError(f"{self.location}: cannot connect: {self._reason(exc)}") from exc
        if others:
            # Another application's schema (public with its tables, say): creating or upgrading an index there
            # would mix the two, and its own alembic_version would read as "made by a newer searchapp".
            shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
            raise ConfigError(f"{self.location}: schema {self.schema!r} holds tables that are not this index's "
                              f"({shown}): give the index a schema of its own (?schema=NAME)")
        if self.read_only_reason is not None:
            self.read_only = True
        if not has_rows:
            if not create:
                raise IndexNotFoundError(
                    f"no index at {self.location}: create one with `searchapp ingest FOLDER --index URL`"
                )
            if self.read_only_reason is not None:
                raise ReadOnlyError(f"{self.location}: cannot create an index: {self.read_only_reason}")
            self._create()
            with self.engine.connect() as conn:  # the extensions it installed
                self.versions = self._read_versions(conn)
        if has_rows:
            self._check_vector_type()
        if self.read_only:
            # No DDL, no migration: an index behind this version's schema needs one writable open first.
            if not migrations.at_head(self.engine, self.schema):
                raise SchemaError(f"{self.location}: the index's schema is older than this searchapp's and this "
                                  "connection is read-only: open it once for writing (any ingest) to migrate it")
            with self.engine.connect() as conn:
                self.has_bm25 = ddl.has_index(conn, self.schema, BM25_INDEX)
            return
        try:
            migrations.upgrade(self.write_engine, version_schema=self.schema)
        except DBAPIError as exc:
            raise SchemaError(f"{self.location}: cannot open the index schema: {self._reason(exc)}") from exc
        if not has_rows and self.vector_type != "vector":
            # Chosen at creation: the column's type is the record of it (typed with its dimension at the first write).
            with self.write_engine.begin() as conn:
                ddl.retype_vectors(conn, self.vector_type)
        with self.write_engine.begin() as conn:
            self.has_bm25 = self._ensure_bm25(conn)

    def _check_vector_type(self) -> None:
        """The stored vectors' type (``vector`` or ``halfvec``); a URL asking another one is refused."""
        with self.engine.connect() as conn:
            stored = ddl.stored_vector_type(conn, self.schema)
        if self.asked_vector_type not in (None, stored):
            raise ConfigError(f"{self.location}: this index stores {stored} vectors, chosen when it was created; "
                              f"vector_type={self.asked_vector_type} applies to a new index only")
        self.vector_type = stored

    def _read_versions(self, conn: Connection) -> dict[str, str | None]:
        return server.read_versions(conn)

    def facts(self) -> dict[str, object]:
        return {
            "postgresql_version": self.versions["postgresql"],
            **{f"{shown}_version": self.versions.get(ext) for ext, shown in server.EXTENSIONS.items()},
            "vector_type": self.vector_type, "read_only": self.read_only, "read_only_reason": self.read_only_reason,
            "warnings": server.version_warnings(self.versions),
        }

    def _create(self) -> None:
        with self.write_engine.begin() as conn:
            present = conn.execute(
                text("SELECT 1 FROM pg_namespace WHERE nspname = :s"), {"s": self.schema}
            ).first()
            try:
                conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public"))
            except DBAPIError as exc:
                raise ConfigError(
                    f"{self.location}: the pgvector extension is needed (CREATE EXTENSION vector): {self._reason(exc)}"
                ) from exc
            conn.execute(text(f"CREATE SCHEMA IF NOT EXISTS {self.q}"))
            self._made_schema = present is None
        with contextlib.suppress(DBAPIError), self.write_engine.begin() as conn:
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS pg_textsearch SCHEMA public"))

    def _ensure_bm25(self, conn: Connection) -> bool:
        """Whether the BM25 index exists, making it where the extension is installed and it is missing (under
        the index's lock for this transaction, so two processes opening it at once do not race; where another
        process holds that lock, as a writer does, it is left to be made later)."""
        if ddl.has_index(conn, self.schema, BM25_INDEX):
            return True
        if not ddl.bm25_installed(conn) or self.read_only:
            return False
        # Tried, never waited for: the key is the writer lock's, and a writer may hold it for as long as its load
        # lasts (a first bulk load builds the BM25 index after its rows, and until then the index is missing).
        # Opened meanwhile, this store goes without and its readers look again when they need it.
        if not conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": self.lock_key}).scalar_one():
            return False
        if ddl.has_index(conn, self.schema, BM25_INDEX):
            return True
        self._create_bm25(conn)
        return True

    def _create_bm25(self, conn: Connection) -> None:
        """The BM25 index (``ddl.create_bm25``), fresh: no deleted passage counts in it."""
        ddl.create_bm25(conn, self.schema)
        self._drop_setting(conn, _STALE_KEY)

    def discard(self) -> None:
        """Drop what an interrupted creation made (the schema, if this store made it)."""
        if self._made_schema:
            with contextlib.suppress(DBAPIError), self.write_engine.begin() as conn:
                conn.execute(text(f"DROP SCHEMA {self.q} CASCADE"))
        self.close()

    @contextlib.contextmanager
    def _begin(self) -> Iterator[Connection]:
        """A write transaction; a failed write (disk full, connection lost) rolls it back as ``StorageError``,
        one whose data the server refuses as ``DataRejectedError`` (psycopg's own, raised by a COPY, too)."""
        from psycopg import DataError as CopyDataError

        try:
            with self.write_engine.begin() as conn:
                yield conn
        except OperationalError as exc:
            raise StorageError(f"{self.location}: cannot write the index: {self._reason(exc)}") from exc
        except (DataError, CopyDataError) as exc:
            first = server.reason(exc) if isinstance(exc, DataError) else (str(exc).strip().splitlines() or [""])[0]
            raise DataRejectedError(f"the database refused its data: {hide_password(first, self._given)}") from exc

    # -- writing -------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self, wait: bool = True, timeout: float = 0.0) -> Iterator[None]:
        # The advisory lock belongs to a database session: threads of this process take turns before they come
        # to it (each would hold a session of its own).
        if self.read_only:
            raise ReadOnlyError(f"{self.location}: the index is read-only: "
                                f"{self.read_only_reason or 'opened read-only'}")
        if not self._mutex.acquire(blocking=wait):
            raise IndexLockedError(f"{self.location}: another thread is writing to this index")
        try:
            with self._advisory_lock(timeout):
                self._type_vectors()
                self._defer_bm25()
                try:
                    yield
                except BaseException:
                    # A failed write can still have moved the BM25 statistics (rolled-back rows count there):
                    # rebuild before the lock goes, without hiding the failure.
                    with contextlib.suppress(Exception):
                        self._rebuild_if_stale()
                    raise
                finally:
                    self.build_deferred_bm25()  # a session that did not flush (or failed) leaves none missing
        finally:
            self._mutex.release()

    @contextlib.contextmanager
    def _advisory_lock(self, timeout: float) -> Iterator[None]:
        conn = self.write_engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            # Tried again rather than pg_advisory_lock under a lock_timeout: that setting does not bound
            # advisory lock waits in every PostgreSQL version, and a poll never leaves a waiter queued.
            def attempt() -> bool:
                return bool(conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": self.lock_key}).scalar_one())

            if not retry(attempt, timeout):
                raise IndexLockedError(locked_message(self.location, timeout))
            try:
                yield
            finally:
                # A session that died took its lock with it; its error must not hide the one that ended the block.
                with contextlib.suppress(DBAPIError):
                    conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self.lock_key})
        finally:
            conn.close()

    def _defer_bm25(self) -> None:
        """On a first load (no passages yet), drop the BM25 index, to build it once the rows are in: an index
        built over the loaded rows takes about half the time of one kept up row by row (20,000 passages: 4.2 s
        against 7.9 s). Meanwhile lexical queries say the index is missing."""
        if not self.has_bm25 or not self.is_empty():
            return
        with self.write_engine.begin() as conn:
            ddl.drop_bm25(conn)
        self.has_bm25, self._bm25_deferred = False, True

    def build_deferred_bm25(self) -> None:
        """Build the BM25 index a first load dropped (nothing if none was): ``flush`` does it at a session's end;
        called apart, it lets a benchmark time the build on its own."""
        if not self._bm25_deferred:
            return
        with self.write_engine.begin() as conn:
            self._set_build_settings(conn)
            self._create_bm25(conn)
        self.has_bm25, self._bm25_deferred = True, False

    def _set_build_settings(self, conn: Connection, rows: int = 0) -> None:
        ddl.set_build_settings(conn, self.build_settings, self.vector_type, self._dimension, rows)

    def _type_vectors(self) -> None:
        with self.write_engine.begin() as conn:
            ddl.type_vectors(conn, self.schema, self._dimension)

    def write(self, remove: Sequence[int], add: Sequence[NewDocument]) -> None:
        try:
            self.write_rows(remove, add)
        except BaseException:
            if add:  # pg_textsearch counted the rolled-back rows: the statistics need a rebuild
                with contextlib.suppress(Exception), self.write_engine.begin() as conn:
                    self._add_to_setting(conn, _STALE_KEY, sum(len(item.spans) for item in add))
            raise

    # -- the record hooks ----------------------------------------------------------------------------------

    def _next_ids(self, conn: Connection, table: Table, n: int) -> list[int]:
        if n == 0:
            return []
        nextval = DbSequence(f"{table.name}_id_seq").next_value()
        return sorted(int(i) for i in conn.execute(select(nextval).select_from(func.generate_series(1, n))).scalars())

    def _insert(self, conn: Connection, table: Table, rows: list[dict[str, object]]) -> None:
        """Rows in by binary ``COPY`` (``copy_in.py``), the driver's fastest path."""
        copy_rows(conn, self.schema, table, rows)

    def _index(self, conn: Connection, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> None:
        # The BM25 index's field of each new passage, in the transaction that inserts it (ON DELETE CASCADE takes
        # it out with its passage).
        assert self.tables.lexical is not None
        fields = ANALYSIS.index_terms(texts, sections)
        self._insert(conn, self.tables.lexical, [
            {"id": i, "lexical_text": f} for i, f in zip(ids, fields, strict=True)])

    def _unindex(self, conn: Connection, doc_ids: Sequence[int]) -> list[int]:
        # pg_textsearch keeps deleted rows in its corpus statistics until the index is rebuilt: count them.
        p = self.tables.passages
        gone = conn.execute(select(func.count()).where(p.c.document_id.in_(doc_ids))).scalar_one()
        if gone:
            self._add_to_setting(conn, _STALE_KEY, int(gone))
        return []  # the vectors live in the rows

    def _among(self, column: ColumnElement[Any], name: str) -> ColumnElement[bool]:
        # One array parameter: the same statement text (and plan) whatever the number of values.
        return column == any_(bindparam(name, type_=ARRAY(BigInteger())))

    @contextlib.contextmanager
    def _snapshot(self, conn: Connection) -> Iterator[Connection]:
        # One REPEATABLE READ transaction: one snapshot for both tables (read through server-side cursors).
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            yield conn

    def flush(self, final: bool = True) -> None:
        """At the end of a write session (``final``): rebuild the BM25 index if passages were deleted since it
        was built (its statistics would still count them), and fit the vector index to the table's size: HNSW
        above the threshold (so a first load builds it after loading), none (exact) below half of it. Nothing in
        the middle of a session: every row is committed already."""
        if not final:
            return
        self.build_deferred_bm25()
        self._rebuild_if_stale()
        with self.write_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            n = conn.execute(select(func.count()).select_from(self.tables.passages)).scalar_one()
            hnsw = ddl.has_index(conn, self.schema, HNSW_INDEX)
            change = self.policy.refit(hnsw, n)
            if change == "approximate":
                self._set_build_settings(conn, int(n))
                ddl.create_hnsw(conn, self.vector_type)
            elif change == "exact":
                ddl.drop_hnsw(conn)

    def _rebuild_if_stale(self) -> None:
        with self.write_engine.connect() as conn:
            stale = self._setting(conn, _STALE_KEY)
        if stale and int(stale) > 0 and self.has_bm25:
            self.compact()

    def compact(self) -> None:
        """Rebuild the BM25 index, so its corpus statistics count only the passages present. Concurrently:
        queries go on meanwhile, with the old statistics until it is done."""
        with self.write_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            ddl.reindex_bm25(conn)
        with self.write_engine.begin() as conn:
            self._drop_setting(conn, _STALE_KEY)
            # Readers in every process replace connections that predate the rebuild (see _fresh_connection).
            self._add_to_setting(conn, GENERATION_KEY, 1)

    # -- reading -------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def reader(self, flt: Filter | None = None, dense: bool = True) -> Iterator[PostgresReader]:
        with self._fresh_connection() as conn, conn.begin():
            try:
                yield PostgresReader(self, conn, flt)
            except DBAPIError as exc:
                unreplicated = getattr(exc.orig, "sqlstate", None) == server.DATA_CORRUPTED
                if self.read_only_reason != server.STANDBY or not unreplicated:
                    raise
                raise ConfigError(f"{self.location}: " + server.UNREPLICATED_BM25.format(
                    reason=self._reason(exc), version=self.versions.get("pg_textsearch"))) from exc

    def _fresh_connection(self) -> Connection:
        return fresh_connection(self.engine, lambda conn: self._setting(conn, GENERATION_KEY), self.location)

    def vector_kind(self) -> str:
        with self.engine.connect() as conn:
            return "hnsw" if ddl.has_index(conn, self.schema, HNSW_INDEX) else "flat"

    def disk_bytes(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(
                text("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                     "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = :s AND c.relkind = 'r'"),
                {"s": self.schema},
            ).scalar_one())

    def close(self) -> None:
        self.engine.dispose()
        self.write_engine.dispose()
