"""The PostgreSQL backend: documents, passages, settings, a pgvector column and a pg_textsearch BM25 index, in
one schema per index. Nothing is kept in the process beyond a connection pool, so any number of serving
processes on any number of hosts answer from the same committed state.

- Dense: ``passages.embedding vector(d)``, inner product on unit vectors (``<#>`` is its negative). Exact (a
  sequential scan) below the policy's threshold, an HNSW index above it, built after the rows are loaded. Per
  query ``hnsw.ef_search`` is raised to :data:`EF_SEARCH_MIN` (recall) and to the number of rows asked for (its
  default, 40, silently caps a ``LIMIT 100``) and, with a filter, ``hnsw.iterative_scan`` is on (else a narrow
  filter returns fewer than ``k`` rows).
- Lexical: real BM25 from pg_textsearch (``lexical_text <@> to_bm25query(q, index)``, negated), never ``ts_rank``,
  over ``passages_lexical``: a row per passage holding the FTS5 terms of its section path
  (``analysis.SECTION_WEIGHT`` times) and of its text (``analysis.lexical_fields``), since pg_textsearch indexes
  one plain column; a table of its own, so the passages' rows, which the exact vector scan reads, are as narrow as
  without it. The terms are FTS5's (the folder backend's tokenizer), read under a text configuration that neither
  stems nor drops a word (:data:`TEXT_CONFIG`), and queries ask for the FTS5 terms of their words: both backends
  count the same terms. Without the extension, lexical
  and hybrid queries raise ``ConfigError`` saying what to install; dense queries work. pg_textsearch does not
  take deleted rows out of its corpus statistics until the index is rebuilt: the store counts the passages
  deleted since the last rebuild and rebuilds the index when a writer finishes, so scores are those of the rows
  present.
- Hybrid: one statement takes each side's top ``k0`` within the filter and returns every candidate with both
  real scores.
- One writer: a session advisory lock keyed by the schema (``IndexLockedError`` for a second writer); a
  group of documents is one transaction, so readers see whole groups only.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Engine,
    Table,
    any_,
    bindparam,
    create_engine,
    event,
    func,
    select,
    text,
)
from sqlalchemy import Sequence as DbSequence
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.pool import NullPool

from searchapp.analysis import fts5_query_terms, lexical_fields
from searchapp.errors import (
    ConfigError,
    IndexLockedError,
    IndexNotFoundError,
    ReadOnlyError,
    SchemaError,
    StorageError,
)
from searchapp.extras import missing
from searchapp.filters import Filter
from searchapp.store import schema as migrations
from searchapp.store.base import Reader, Stores
from searchapp.store.filter_sql import passages_sql
from searchapp.store.lock import locked_message, retry
from searchapp.store.masking import hide_password
from searchapp.store.records import Records
from searchapp.store.tables import tables
from searchapp.store.vector_policy import VectorPolicy
from searchapp.types import (
    COSINE_MIN,
    Candidates,
    NewDocument,
    PassageRecord,
    Run,
)

DEFAULT_SCHEMA = "searchapp"
BM25_INDEX = "passages_bm25"
# The BM25 index's text configuration: a copy of ``simple`` (lower-case, no stemmer, no stopword), so what
# pg_textsearch counts is the FTS5 terms written to passages_lexical. PostgreSQL's default parser does not cut such
# a term further: a term is a run of letters and digits (unicode61's token characters), which the parser keeps as
# one word, number or numword token (``h2o``, ``1e5``, ``007``), never one of its compound kinds (those need a
# hyphen, dot, slash or @ between the characters). Non-ASCII characters are letters to it in a database of the C
# locale (tests/integration/test_postgres.py); under another locale a character its iswalpha() refuses (``½``,
# ``²``, private-use ones) separates words, and a term of over 2,047 characters is dropped (PostgreSQL's limit).
TEXT_CONFIG = "searchapp_terms"
HNSW_INDEX = "passages_hnsw"
# Settings rows (not IndexConfig settings): passages deleted since the BM25 index was last rebuilt, and how
# many times it has been rebuilt.
_STALE_KEY = "bm25_deleted_passages"
_GENERATION_KEY = "bm25_generation"
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# PostgreSQL's own schemas besides pg_*: an index there would put its tables among the catalog's views.
_SYSTEM_SCHEMAS = ("information_schema",)
# The relations an index's schema holds (tables.py, and Alembic's revision): any other is another application's.
_OWN_RELATIONS = frozenset({"settings", "documents", "passages", "passages_lexical", "alembic_version"})
_NO_BM25_INDEX = (
    "lexical and hybrid ranking on PostgreSQL need the index's BM25 index (passages_bm25), which is missing: open "
    "the index once for writing (any ingest) to build it; dense queries work without it"
)
_STANDBY = "the server is a hot standby (in recovery): writes go to the primary"
# SQLSTATE XX001: a relation's file shorter than its pages, which is what a standby holds of a BM25 index that
# pg_textsearch before 1.2.0 never wrote to the WAL (tests/integration/test_postgres_standby.py).
_DATA_CORRUPTED = "XX001"
_UNREPLICATED_BM25 = (
    "the BM25 index cannot be read on this hot standby ({reason}): pg_textsearch {version} does not write its "
    "index to the WAL, so a streaming standby holds none of it (fixed in 1.2.0); query the primary for lexical "
    "and hybrid results, and this standby for dense ones"
)
_NO_BM25 = (
    "lexical and hybrid ranking on PostgreSQL need the pg_textsearch extension (PostgreSQL 17 or 18, with "
    "shared_preload_libraries = 'pg_textsearch', then CREATE EXTENSION pg_textsearch): it is not installed in "
    "this database; dense queries work without it"
)
# The URL's parameters that are the store's, not the driver's.
STORE_PARAMETERS = ("pool_size", "vector_type", "maintenance_work_mem", "max_parallel_maintenance_workers")
VECTOR_TYPES = ("vector", "halfvec")
# An HNSW graph's bytes per row beyond its vector (pgvector's estimate: neighbour lists, tuple headers), and the
# allowance on top: N x (8 + bytes per vector) x 1.3 (docs/postgres.md, Sizing).
_HNSW_ROW_OVERHEAD, _HNSW_SLACK = 8, 1.3
# The least hnsw.ef_search a query runs with (pgvector's default is 40): recall@10 against exact search at 1M
# vectors drawn around real ones was 0.846 at 40, 0.929 at 100, 0.961 at 200 and 0.983 at 400, at 1.2, 1.7, 2.7
# and 4.4 ms a query (docs/postgres.md, "Dense recall@10 at 1M"); 200 is the least of these above 0.95.
EF_SEARCH_MIN = 200
# pgvector's limit on hnsw.ef_search.
_MAX_EF = 1000
# Known wrong-result bugs of the extensions, by the version that fixed them: (extension, fixed in, the bug).
KNOWN_BUGS: tuple[tuple[str, tuple[int, ...], str], ...] = (
    ("pg_textsearch", (1, 1, 0), "BM25 corpus statistics drift after deletes"),
    ("pg_textsearch", (1, 2, 0), "Block-Max WAND under-reports multi-term scores, and streaming standbys error or "
                                 "serve results frozen at their first access"),
    ("pg_textsearch", (1, 3, 1), "duplicate rows under concurrent writes"),
    ("vector", (0, 8, 4), "HNSW vacuum and insert races"),
)
# The extensions as status names them.
_EXTENSIONS = {"vector": "pgvector", "pg_textsearch": "pg_textsearch"}


def parse_location(location: str) -> tuple[URL, str]:
    """The SQLAlchemy URL (driver psycopg, whatever driver the URL names) and the index's schema
    (``?schema=NAME``, default ``searchapp``)."""
    try:
        url = make_url(location)
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy raises a plain ArgumentError on any malformed URL
        raise ConfigError(
            f"{_masked(location)!r} is not a database URL: {hide_password(str(exc), location)}"
        ) from None
    query = dict(url.query)
    schema = str(query.pop("schema", DEFAULT_SCHEMA))
    if not schema or re.search(r"[?&]schema=(?:&|#|$)", location):  # SQLAlchemy drops an empty value
        raise ConfigError(f"schema is empty: give ?schema=NAME, or leave it out for the default {DEFAULT_SCHEMA!r}")
    if not _SCHEMA_NAME.fullmatch(schema) or schema.startswith("pg_") or schema in _SYSTEM_SCHEMAS:
        raise ConfigError(f"schema {schema!r}: use lower-case letters, digits and '_' (at most 63), not starting "
                          f"with pg_ and not {', '.join(_SYSTEM_SCHEMAS)}: PostgreSQL's own")
    for name in STORE_PARAMETERS:  # read by the store itself (store_parameter)
        query.pop(name, None)
    unknown = sorted(set(query) - _connection_parameters(set(query)))
    if unknown:
        raise ConfigError(f"unknown URL parameter {', '.join(map(repr, unknown))}: use schema, "
                          f"{', '.join(STORE_PARAMETERS)} or a libpq connection parameter (sslmode, "
                          "connect_timeout, application_name, ...)")
    return url.set(drivername="postgresql+psycopg", query=query), schema


def _connection_parameters(given: set[str]) -> set[str]:
    """The names libpq takes as connection parameters (``given`` when psycopg is missing: the store then says
    what to install). ``options`` is the store's own (the search path)."""
    try:
        from psycopg import pq
    except ImportError:
        return given
    return {o.keyword.decode() for o in pq.Conninfo.get_defaults()} - {"options"}


def store_parameter(location: str, name: str) -> str | None:
    """A URL parameter the store reads itself (one of ``STORE_PARAMETERS``), ``None`` when not given."""
    value = make_url(location).query.get(name)
    return None if value is None else str(value)


def vector_type_of(location: str) -> str | None:
    """``?vector_type=``: ``vector`` (float32) or ``halfvec`` (float16: half the memory and disk), chosen when the
    index is created; ``None`` when the URL does not say."""
    chosen = store_parameter(location, "vector_type")
    if chosen is not None and chosen not in VECTOR_TYPES:
        raise ConfigError(f"vector_type {chosen!r}: choose one of {', '.join(VECTOR_TYPES)}")
    return chosen


def build_settings_of(location: str) -> dict[str, str]:
    """Server settings for index builds given in the URL (``?maintenance_work_mem=2GB``,
    ``?max_parallel_maintenance_workers=4``), checked to be plain values."""
    out = {}
    for name in ("maintenance_work_mem", "max_parallel_maintenance_workers"):
        value = store_parameter(location, name)
        if value is not None:
            if not re.fullmatch(r"\d+\s*(?:[kMGT]B)?", value):
                raise ConfigError(f"{name} {value!r}: give a number (memory with kB, MB, GB or TB)")
            out[name] = value
    return out


def pool_size_of(location: str) -> int:
    """Pooled connections a process keeps for queries (``?pool_size=N``, default 8); up to twice as many are
    opened under load. Mind the server's ``max_connections`` when running many processes."""
    raw = store_parameter(location, "pool_size") or "8"
    try:
        size = int(str(raw))
    except ValueError:
        size = 0
    if size < 1:
        raise ConfigError(f"pool_size {raw!r}: give a whole number of at least 1")
    return size


def display_location(location: str) -> str:
    """The location with any password hidden, for messages and ``status``."""
    try:
        return _masked(make_url(location).render_as_string(hide_password=True))
    except Exception:  # noqa: BLE001 - masked as written when it does not parse
        return _masked(location)


def _masked(location: str) -> str:
    return hide_password(location, location)


def _vector_dumper(oid: int, half: bool) -> type:
    """A psycopg binary dumper of float32 ``(d,)`` arrays as pgvector's ``vector`` (or ``halfvec``, ``half``)
    binary value: the dimension and a reserved word (int16 each), then the values (float4 or float2), big-endian."""
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    dtype = ">f2" if half else ">f4"

    class VectorDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: Any) -> bytes:
            vec = np.asarray(obj).reshape(-1)
            return struct.pack(">HH", vec.size, 0) + vec.astype(dtype).tobytes()

    VectorDumper.oid = oid
    return VectorDumper


def _version_tuple(version: str) -> tuple[int, ...]:
    """``"0.8.1"`` -> ``(0, 8, 1)``; the leading numbers of a version string (``"18.6 (Debian 18.6-1)"`` -> (18, 6))."""
    found = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(part) for part in found.group(0).split(".")) if found else ()


def version_warnings(versions: dict[str, str | None]) -> list[str]:
    """A warning for each installed extension whose version has known wrong-result bugs, naming them and the
    version that fixes the last of them. ``versions``: extension name (``vector``, ``pg_textsearch``) -> its
    version, ``None`` when it is not installed."""
    out = []
    for ext, shown in _EXTENSIONS.items():
        version = versions.get(ext)
        if not version:
            continue
        bugs = [(fixed, bug) for name, fixed, bug in KNOWN_BUGS if name == ext and _version_tuple(version) < fixed]
        if bugs:
            listed = "; ".join(f"{bug} (fixed in {'.'.join(map(str, fixed))})" for fixed, bug in bugs)
            need = ".".join(map(str, max(fixed for fixed, _ in bugs)))
            out.append(f"{shown} {version} has known wrong-result bugs: {listed}: use {shown} >= {need}")
    return out


def _vector_text(vec: np.ndarray) -> str:
    # repr of each float32 value (as a double) reads back to the same float32: the stored vector is exact.
    return "[" + ",".join(map(repr, np.asarray(vec, dtype=np.float32).tolist())) + "]"


class PostgresStores(Records, Stores):
    """The stores of an index held in a PostgreSQL schema.

    ``create``: make the schema (and the extensions, if missing) when it holds no index yet; otherwise a missing
    index raises ``IndexNotFoundError``. ``dimension`` is asked for when the vector column is first typed.
    """

    backend = "postgresql"
    tables = tables("postgresql")
    private_settings = (_STALE_KEY, _GENERATION_KEY)

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
        self.q = f'"{self.schema}"'  # the schema as a quoted identifier (a reserved word is a valid name)
        # Advisory locks are per database already: the schema names the index within it.
        self.lock_key = int.from_bytes(hashlib.sha256(f"searchapp:{self.schema}".encode()).digest()[:8], "big",
                                       signed=True)
        try:
            import psycopg  # noqa: F401 - only to say what is missing before SQLAlchemy does
        except ImportError as exc:
            raise missing("postgres", "PostgreSQL indexes", exc) from exc
        # Every connection resolves our tables in this index's schema, the extensions' in public.
        options = {"options": f'-csearch_path="{self.schema}",public'}
        size = pool_size_of(location)
        self.engine: Engine = create_engine(self.url, connect_args=options, pool_size=size, max_overflow=size,
                                            pool_pre_ping=True)
        # Writes (and DDL) get a connection of their own, closed after use, never one a query will reuse: a
        # pg_textsearch 1.0.0 backend that has written to a BM25-indexed table scores later queries wrongly (no
        # rows, or 0 for every row, on some of its statements; tests/integration/test_postgres.py).
        self.write_engine: Engine = create_engine(self.url, connect_args=options, poolclass=NullPool)
        event.listen(self.engine, "connect", self._tag_connection)
        try:
            self._open(create)
        except BaseException:
            self.close()
            raise

    def _reason(self, exc: DBAPIError) -> str:
        """The first line of the server's or the driver's message, the URL's password masked (a host name
        or a user read from a malformed URL may carry part of it)."""
        return hide_password(_reason(exc), self._given)

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
                self.read_only_reason = self._read_only_reason(conn, exists)
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
                self.has_bm25 = self._has_index(conn, BM25_INDEX)
            return
        try:
            migrations.upgrade(self.write_engine, version_schema=self.schema)
        except DBAPIError as exc:
            raise SchemaError(f"{self.location}: cannot open the index schema: {self._reason(exc)}") from exc
        if not has_rows and self.vector_type != "vector":
            # Chosen at creation: the column's type is the record of it (typed with its dimension at the first write).
            with self.write_engine.begin() as conn:
                conn.execute(text(f"ALTER TABLE passages ALTER COLUMN embedding TYPE {self.vector_type} "
                                  f"USING embedding::{self.vector_type}"))
        with self.write_engine.begin() as conn:
            self.has_bm25 = self._ensure_bm25(conn)

    def _check_vector_type(self) -> None:
        """The stored vectors' type (``vector`` or ``halfvec``); a URL asking another one is refused."""
        with self.engine.connect() as conn:
            stored = conn.execute(
                text("SELECT t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
                     "WHERE a.attrelid = to_regclass(:t) AND a.attname = 'embedding'"), {"t": f"{self.q}.passages"},
            ).scalar_one_or_none()
        stored = stored if stored in VECTOR_TYPES else "vector"
        if self.asked_vector_type not in (None, stored):
            raise ConfigError(f"{self.location}: this index stores {stored} vectors, chosen when it was created; "
                              f"vector_type={self.asked_vector_type} applies to a new index only")
        self.vector_type = stored

    def _read_versions(self, conn: Connection) -> dict[str, str | None]:
        """The server's PostgreSQL version and its extensions' (``None``: not installed in this database)."""
        rows = dict(conn.execute(text("SELECT extname, extversion FROM pg_extension WHERE extname = ANY(:e)"),
                                 {"e": list(_EXTENSIONS)}).all())
        server = str(conn.execute(text("SHOW server_version")).scalar_one())
        return {"postgresql": server, **{ext: rows.get(ext) for ext in _EXTENSIONS}}

    def _read_only_reason(self, conn: Connection, exists: bool) -> str | None:
        """Why this connection cannot write the index, or ``None``: a hot standby, a read-only default
        transaction, or a role without the right to write its passages."""
        if conn.execute(text("SELECT pg_is_in_recovery()")).scalar_one():
            return _STANDBY
        if conn.execute(text("SELECT current_setting('transaction_read_only')")).scalar_one() == "on":
            return "the connection is read-only (default_transaction_read_only)"
        if exists and not conn.execute(text("SELECT has_table_privilege(:t, 'INSERT')"),
                                       {"t": f"{self.q}.passages"}).scalar_one():
            return f"the role {conn.execute(text('SELECT current_user')).scalar_one()} may not write the index"
        return None

    def facts(self) -> dict[str, object]:
        return {
            "postgresql_version": self.versions["postgresql"],
            **{f"{shown}_version": self.versions.get(ext) for ext, shown in _EXTENSIONS.items()},
            "vector_type": self.vector_type, "read_only": self.read_only, "read_only_reason": self.read_only_reason,
            "warnings": version_warnings(self.versions),
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
            conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"'))
            self._made_schema = present is None
        with contextlib.suppress(DBAPIError), self.write_engine.begin() as conn:
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS pg_textsearch SCHEMA public"))

    def _ensure_bm25(self, conn: Connection) -> bool:
        """Whether the BM25 index exists, making it where the extension is installed and it is missing (under
        the index's lock for this transaction, so two processes opening it at once do not race; where another
        process holds that lock, as a writer does, it is left to be made later)."""
        if self._has_index(conn, BM25_INDEX):
            return True
        installed = conn.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'pg_textsearch'")).first()
        if installed is None or self.read_only:
            return False
        # Tried, never waited for: the key is the writer lock's, and a writer may hold it for as long as its load
        # lasts (a first bulk load builds the BM25 index after its rows, and until then the index is missing).
        # Opened meanwhile, this store goes without and its readers look again when they need it.
        if not conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": self.lock_key}).scalar_one():
            return False
        if self._has_index(conn, BM25_INDEX):
            return True
        self._create_bm25(conn)
        return True

    def _create_bm25(self, conn: Connection) -> None:
        """The BM25 index over the passages' lexical field (``passages_lexical``: section path and text), with the
        index's text configuration (made if missing). A fresh index: no deleted passage counts in it."""
        q, cfg = self.q, TEXT_CONFIG
        # The field holds FTS5's terms already (stemmed, every word kept, as the folder's FTS5 index has them): the
        # configuration only splits them at their spaces. (It may outlive the index: dropping the extension drops
        # the index only.)
        if conn.execute(text("SELECT 1 FROM pg_ts_config c JOIN pg_namespace n ON n.oid = c.cfgnamespace "
                             "WHERE n.nspname = :s AND c.cfgname = :c"), {"s": self.schema, "c": cfg}).first() is None:
            conn.execute(text(f"CREATE TEXT SEARCH CONFIGURATION {q}.{cfg} (COPY = pg_catalog.simple)"))
        conn.execute(text(f"CREATE INDEX {BM25_INDEX} ON passages_lexical USING bm25(lexical_text) "
                          f"WITH (text_config='{q}.{cfg}')"))
        self._drop_setting(conn, _STALE_KEY)

    def discard(self) -> None:
        """Drop what an interrupted creation made (the schema, if this store made it)."""
        if self._made_schema:
            with contextlib.suppress(DBAPIError), self.write_engine.begin() as conn:
                conn.execute(text(f'DROP SCHEMA "{self.schema}" CASCADE'))
        self.close()

    @contextlib.contextmanager
    def _begin(self) -> Iterator[Connection]:
        """A write transaction; a failed write (disk full, connection lost) rolls it back as ``StorageError``."""
        try:
            with self.write_engine.begin() as conn:
                yield conn
        except OperationalError as exc:
            raise StorageError(f"{self.location}: cannot write the index: {self._reason(exc)}") from exc

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
                    self._build_deferred_bm25()  # a session that did not flush (or failed) leaves none missing
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
            conn.execute(text(f"DROP INDEX {BM25_INDEX}"))
        self.has_bm25, self._bm25_deferred = False, True

    def _build_deferred_bm25(self) -> None:
        if not self._bm25_deferred:
            return
        with self.write_engine.begin() as conn:
            self._set_build_settings(conn)
            self._create_bm25(conn)
        self.has_bm25, self._bm25_deferred = True, False

    def _set_build_settings(self, conn: Connection, rows: int = 0) -> None:
        """Memory and parallel workers for an index build, for this session: the URL's, else
        ``maintenance_work_mem`` raised (never lowered) to the HNSW graph's estimate for ``rows``, N x (8 + bytes
        per vector) x 1.3, so the graph is built in memory (pgvector's build slows down sharply once it is not);
        parallel maintenance workers as the server allows (``max_parallel_maintenance_workers``, default 2)."""
        settings = dict(self.build_settings)
        if "maintenance_work_mem" not in settings and rows:
            per_vector = (2 if self.vector_type == "halfvec" else 4) * int(self._dimension())
            need_kb = int(rows * (_HNSW_ROW_OVERHEAD + per_vector) * _HNSW_SLACK / 1024) + 1
            have_kb = int(conn.execute(text("SELECT setting FROM pg_settings WHERE name = 'maintenance_work_mem'"))
                          .scalar_one())
            if need_kb > have_kb:
                settings["maintenance_work_mem"] = f"{need_kb}kB"
        for name, value in settings.items():
            conn.execute(text("SELECT set_config(:n, :v, false)"), {"n": name, "v": value.replace(" ", "")})

    def _type_vectors(self) -> None:
        """Give the embedding column its dimension (needed by HNSW), once the encoder's is known."""
        with self.write_engine.begin() as conn:
            typed = conn.execute(
                text("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                     "WHERE attrelid = to_regclass(:t) AND attname = 'embedding'"),
                {"t": f"{self.q}.passages"},
            ).scalar_one()
            if typed in VECTOR_TYPES:
                # Kept in the row (STORAGE MAIN; pgvector's default is EXTERNAL): a vector beside the text makes
                # the row pass the TOAST threshold, and an exact scan would then fetch every vector out of line.
                # MAIN, not PLAIN: a row too wide for a page still moves it out as a last resort.
                d = int(self._dimension())
                conn.execute(text(f"ALTER TABLE passages ALTER COLUMN embedding TYPE {typed}({d}), "
                                  "ALTER COLUMN embedding SET STORAGE MAIN"))

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
        """Rows in by binary ``COPY`` (psycopg's), the driver's fastest path: a few times an INSERT's rate for
        a bulk load; vectors in pgvector's binary form."""
        columns = [c for c in table.columns if c.key in rows[0]]
        names, keys = [c.name for c in columns], [c.key for c in columns]
        raw = conn.connection.driver_connection
        oids = dict(conn.execute(text("SELECT attname, atttypid::int FROM pg_attribute WHERE attrelid = "
                                      "to_regclass(:t) AND attnum > 0 AND NOT attisdropped"),
                                 {"t": f"{self.q}.{table.name}"}).all())
        vector = next((n for n in names if n == "embedding"), None)
        if vector is not None:
            half = conn.execute(text("SELECT typname FROM pg_type WHERE oid = :o"), {"o": oids[vector]}).scalar_one()
            raw.adapters.register_dumper(np.ndarray, _vector_dumper(oids[vector], half == "halfvec"))
        from psycopg import sql

        statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
            sql.Identifier(self.schema, table.name), sql.SQL(", ").join(map(sql.Identifier, names)))
        with raw.cursor() as cur, cur.copy(statement) as copy:
            copy.set_types([oids[n] for n in names])
            for row in rows:
                copy.write_row([row[k] for k in keys])

    def _index(self, conn: Connection, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> None:
        # The BM25 index's field of each new passage, in the transaction that inserts it (ON DELETE CASCADE takes
        # it out with its passage).
        assert self.tables.lexical is not None
        fields = lexical_fields(texts, sections)
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
        self._build_deferred_bm25()
        self._rebuild_if_stale()
        with self.write_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            n = conn.execute(select(func.count()).select_from(self.tables.passages)).scalar_one()
            hnsw = self._has_index(conn, HNSW_INDEX)
            change = self.policy.refit(hnsw, n)
            if change == "approximate":
                self._set_build_settings(conn, int(n))
                conn.execute(text(f"CREATE INDEX {HNSW_INDEX} ON passages USING hnsw "
                                  f"(embedding {self.vector_type}_ip_ops)"))
            elif change == "exact":
                conn.execute(text(f"DROP INDEX {HNSW_INDEX}"))

    def _rebuild_if_stale(self) -> None:
        with self.write_engine.connect() as conn:
            stale = self._setting(conn, _STALE_KEY)
        if stale and int(stale) > 0 and self.has_bm25:
            self.compact()

    def compact(self) -> None:
        """Rebuild the BM25 index, so its corpus statistics count only the passages present. Concurrently:
        queries go on meanwhile, with the old statistics until it is done."""
        with self.write_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f"REINDEX INDEX CONCURRENTLY {BM25_INDEX}"))
        with self.write_engine.begin() as conn:
            self._drop_setting(conn, _STALE_KEY)
            # Readers in every process replace connections that predate the rebuild (see _fresh_connection).
            self._add_to_setting(conn, _GENERATION_KEY, 1)

    # -- reading -------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def reader(self, flt: Filter | None = None, dense: bool = True) -> Iterator[PostgresReader]:
        with self._fresh_connection() as conn, conn.begin():
            try:
                yield PostgresReader(self, conn, flt)
            except DBAPIError as exc:
                if self.read_only_reason != _STANDBY or getattr(exc.orig, "sqlstate", None) != _DATA_CORRUPTED:
                    raise
                raise ConfigError(f"{self.location}: " + _UNREPLICATED_BM25.format(
                    reason=self._reason(exc), version=self.versions.get("pg_textsearch"))) from exc

    def _tag_connection(self, dbapi_conn: Any, record: Any) -> None:
        """On connect: remember which BM25 rebuild the new backend started after."""
        s = self.tables.settings
        sql = str(select(s.c.value).where(s.c.key == _GENERATION_KEY).compile(
            dialect=self.engine.dialect, compile_kwargs={"literal_binds": True}))
        cur = dbapi_conn.cursor()
        try:
            cur.execute(sql)
            row = cur.fetchone()
            record.info["bm25_generation"] = row[0] if row else None
        except Exception:  # noqa: BLE001 - no settings table yet (an index being created): nothing to compare
            record.info["bm25_generation"] = None
        finally:
            cur.close()
            dbapi_conn.rollback()

    def _fresh_connection(self) -> Connection:
        """A pooled connection opened after the BM25 index's last rebuild: a pg_textsearch 1.0.0 backend keeps
        the corpus statistics it saw before another session's REINDEX (its scores then differ from every newer
        backend's; tests/integration/test_postgres.py), so one that predates a rebuild is replaced."""
        for _ in range(2 * self.engine.pool.size() + 2):  # type: ignore[attr-defined]
            conn = self.engine.connect()
            try:
                generation = self._setting(conn, _GENERATION_KEY)
                conn.rollback()
            except BaseException:
                conn.close()
                raise
            if conn.connection.info.get("bm25_generation") == generation:
                return conn
            conn.invalidate()  # its backend predates the rebuild: closed, never pooled again
            conn.close()
        raise StorageError(f"{self.location}: no connection opened after the last BM25 rebuild could be had")

    def vector_kind(self) -> str:
        with self.engine.connect() as conn:
            return "hnsw" if self._has_index(conn, HNSW_INDEX) else "flat"

    def _has_index(self, conn: Connection, name: str) -> bool:
        found = conn.execute(text("SELECT to_regclass(:i) IS NOT NULL"), {"i": f"{self.q}.{name}"})
        return bool(found.scalar_one())

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


class PostgresReader(Reader):
    """A read session: one connection, one transaction (so ``SET LOCAL`` settings last for it)."""

    def __init__(self, stores: PostgresStores, conn: Connection, flt: Filter | None) -> None:
        self.stores = stores
        self.conn = conn
        self.filtered = False
        self.scope, self.params = "", {}
        if flt is not None and not flt.empty:
            sql, self.params = passages_sql(flt, dialect="postgresql")
            self.scope, self.filtered = f" AND p.id IN ({sql})", True
        self._ef = 0
        # The query vector as the stored type (a float32 query against halfvec rows is cast down, as they were).
        self._qvec = f"CAST(:v AS {stores.vector_type})"

    def _tune(self, k: int) -> None:
        ef = min(_MAX_EF, max(EF_SEARCH_MIN, k))
        if ef > self._ef:
            self.conn.execute(text(f"SET LOCAL hnsw.ef_search = {ef}"))
            # A filter, or more rows than ef_search may be, would otherwise end the scan short of k.
            if (self.filtered or k > _MAX_EF) and self._ef == 0:
                self.conn.execute(text("SET LOCAL hnsw.iterative_scan = relaxed_order"))
            self._ef = ef

    def _bm25(self) -> str:
        if not self.stores.has_bm25:
            self.stores.has_bm25 = self.stores._has_index(self.conn, BM25_INDEX)  # made since this store opened?
        if not self.stores.has_bm25:
            installed = self.conn.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'pg_textsearch'")).first()
            raise ConfigError(_NO_BM25 if installed is None else _NO_BM25_INDEX)
        return f"to_bm25query(CAST(:q AS text), '{self.stores.schema}.{BM25_INDEX}')"

    def lexical(self, query: str, k: int) -> Run:
        query = " ".join(fts5_query_terms(query))
        if not query:  # nothing to match (punctuation only), as in a folder index
            return []
        rows = self.conn.execute(text(self._top_bm25("k")), {"q": query, "k": k, **self.params})
        return _bm25_run(rows)

    def _top_bm25(self, limit: str) -> str:
        """pg_textsearch's ordered top-k: the bare ``ORDER BY lexical_text <@> q LIMIT n`` its Block-Max WAND scan
        serves (over ``passages_lexical``, aliased ``p`` as the filter's scope names it: the same ids).
        No ``<@>`` in WHERE (scored on its own, outside the scan) and no second sort key (an incremental sort
        above the scan that reads far more of it): the run's tie order and non-matches are settled in Python
        (:func:`_bm25_run`)."""
        bq = self._bm25()
        where = f" WHERE TRUE{self.scope}" if self.scope else ""
        return (f"SELECT p.id, -(p.lexical_text <@> {bq}) AS s FROM passages_lexical p{where} "
                f"ORDER BY p.lexical_text <@> {bq} LIMIT :{limit}")

    def dense(self, qvec: np.ndarray, k: int) -> Run:
        self._tune(k)
        rows = self.conn.execute(
            text(f"SELECT p.id, -(p.embedding <#> {self._qvec}) AS s FROM passages p WHERE TRUE{self.scope} "
                 f"ORDER BY p.embedding <#> {self._qvec} LIMIT :k"),
            {"v": _vector_text(qvec), "k": k, **self.params},
        )
        # HNSW's relaxed order may return near-ties out of order: the run is sorted as every run is.
        return sorted(((int(i), float(s)) for i, s in rows), key=lambda x: (-x[1], x[0]))

    def gather(self, query: str, qvec: np.ndarray, k0: int) -> Candidates:
        terms = " ".join(fts5_query_terms(query))
        if not terms:  # no term to match: the dense side's candidates, each with BM25 0
            dense = dict(self.dense(qvec, k0))
            return Candidates(query, dense, dict.fromkeys(dense, 0.0))
        return self._gather(query, terms, qvec, k0)

    def _gather(self, query: str, terms: str, qvec: np.ndarray, k0: int) -> Candidates:
        """One statement: the dense top ``k0`` (``dn``, HNSW above the threshold), the lexical top ``k0`` (``lt``,
        the BM25 index's ordered top-k), and for every candidate its cosine and BM25: a lexical candidate's from
        the scan, a dense-only candidate's scored on its own (a handful of rows, whatever the corpus size; a
        connection that never wrote scores it right, see ``write_engine``)."""
        bq = self._bm25()
        self._tune(k0)
        rows = self.conn.execute(
            text(
                "WITH dn AS MATERIALIZED (SELECT p.id FROM passages p WHERE TRUE" + self.scope
                + f" ORDER BY p.embedding <#> {self._qvec} LIMIT :k0), "
                f"lt AS MATERIALIZED ({self._top_bm25('k0')}) "
                # The candidates' rows by key (an array of ids: a join could read the table through), and a
                # dense-only candidate's BM25 field by its key too (a subquery: a join to passages_lexical was
                # planned as a sequential scan of it, tests/integration/test_postgres_plans.py).
                f"SELECT p.id, -(p.embedding <#> {self._qvec}), coalesce(lt.s, -(SELECT l.lexical_text <@> {bq} "
                "FROM passages_lexical l WHERE l.id = p.id)) FROM passages p LEFT JOIN lt ON lt.id = p.id "
                "WHERE p.id = ANY(ARRAY(SELECT id FROM dn UNION SELECT id FROM lt))"
            ),
            {"q": terms, "v": _vector_text(qvec), "k0": k0, **self.params},
        )
        dense: dict[int, float] = {}
        lexical: dict[int, float] = {}
        for pid, cos, bm25 in rows:
            dense[int(pid)] = float(cos) if cos is not None else COSINE_MIN
            lexical[int(pid)] = max(float(bm25), 0.0)  # a non-match scores 0 (its <@> is -0)
        return Candidates(query, dense, lexical)

    def hydrate(self, ids: Sequence[int]) -> dict[int, PassageRecord]:
        return self.stores.hydrate(ids, self.conn)


def _bm25_run(rows: Any) -> Run:
    """An ordered BM25 scan's rows as a run: matches only (a non-match scores 0), each passage once (pg_textsearch
    1.0.0's scan can return a row twice), ties in id order as in every run."""
    best: dict[int, float] = {}
    for pid, score in rows:
        if score > 0:
            best.setdefault(int(pid), float(score))
    return sorted(best.items(), key=lambda x: (-x[1], x[0]))


def _reason(exc: DBAPIError) -> str:
    return str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc).splitlines()[0]
