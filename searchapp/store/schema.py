"""Opening the index database: engine with the right pragmas, and Alembic migrations run on open."""

from __future__ import annotations

import contextlib
import ctypes
import importlib.resources
import os
import re
import sys
import threading
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import QueuePool

from searchapp.errors import SchemaError
from searchapp.sqlite_driver import dbapi, library_file


def migrations_dir() -> Path:
    """Where the Alembic scripts are: inside the installed wheel, or at the top of a source checkout."""
    try:
        packaged = Path(str(importlib.resources.files("searchapp") / "migrations"))
        if (packaged / "env.py").is_file():
            return packaged
    except ModuleNotFoundError:  # pragma: no cover - searchapp is always importable here
        pass
    return Path(__file__).resolve().parents[2] / "migrations"


def writable(folder: Path) -> bool:
    """Whether this process may create and change files in ``folder`` (not a read-only mount, a folder without
    write permission for it, a backup on read-only media)."""
    return os.access(folder, os.W_OK)


def sqlite_uri(db_path: Path, read_only: bool) -> str:
    """The URI a connection to ``db_path`` opens: read-write; or read-only (``mode=ro``: never a write, never a
    file created), and ``immutable=1`` as well where the folder cannot be written, since SQLite could not create
    the WAL index (``-shm``) a reader of a WAL database needs there, and nothing can change the database under
    this process's nose that it could not itself (another user who may write there should open it so too)."""
    uri = db_path.resolve().as_uri()
    if not read_only:
        return uri + "?mode=rwc"
    return uri + ("?mode=ro" if writable(db_path.parent) else "?mode=ro&immutable=1")


# Each connection's page cache (SQLite's default: 2 MiB). BM25 reads every match's length from FTS5's docsize
# table, a random lookup per match: about 11 bytes a passage, 10.5 MB at 1M passages, so the default held a fifth
# of it and the rest came from the OS through a read call each. Pages are cached as they are read, so a small
# index's connections stay small (docs/performance.md, "The SQLite library, and the page cache").
CACHE_KIB = 32 * 1024
_SQLITE_CONFIG_MEMSTATUS = 9  # sqlite3.h
_memstatus_lock = threading.Lock()
_memstatus_checked = False


def memory_statistics_off() -> bool:
    """Turn SQLite's memory statistics off for this process, if nothing in it holds SQLite memory yet; whether
    they are off by this call.

    SQLite counts every allocation under one process-wide mutex while they are on (SQLITE_CONFIG_MEMSTATUS, on
    unless the library was built otherwise). FTS5 allocates for every match it scores, so queries on two
    threads, each on its own connection, took turns instead of running at once: two streams of lexical queries
    over 1M passages took 2.0x one stream's time, 1.08x with the statistics off, and one stream ran about 10%
    faster (docs/performance.md, "Lexical scoring in parts"). SQLite's own documentation recommends building
    with them off; here they can only be changed while SQLite is shut down, so this is done only when its
    memory in use is zero (no connection open anywhere in the process) and only once. It reaches the
    library searchapp connects through (``sqlite_driver.dbapi``) with ctypes, on Linux only (``sqlite3_config``
    is variadic, which ctypes calls correctly only where variadic and fixed arguments are passed alike);
    elsewhere, or if the library does not export the functions, nothing changes."""
    global _memstatus_checked
    with _memstatus_lock:
        if _memstatus_checked:
            return False
        _memstatus_checked = True
        if sys.platform != "linux":
            return False
        try:
            lib = ctypes.CDLL(library_file())
            lib.sqlite3_memory_used.restype = ctypes.c_int64
            if lib.sqlite3_memory_used() != 0 or lib.sqlite3_shutdown() != 0:
                return False
            off = lib.sqlite3_config(_SQLITE_CONFIG_MEMSTATUS, ctypes.c_int(0)) == 0
            lib.sqlite3_initialize()
            return off
        except (OSError, AttributeError):
            return False


def make_engine(db_path: Path, read_only: bool = False) -> Engine:
    """A SQLite engine in WAL mode with foreign keys on and a generous busy timeout.

    WAL lets queries from other processes read a consistent snapshot while an ingest writes. ``read_only``:
    connections opened with ``mode=ro`` (:func:`sqlite_uri`) and no journal pragma, which would be a write.
    """
    memory_statistics_off()
    uri = sqlite_uri(db_path, read_only)
    # The dialect is given the library's module too: SQLAlchemy wraps only the errors of the module it was given.
    sqlite3 = dbapi()
    # A server searches from many threads, each holding a connection for its query: allow well over FastAPI's
    # default 40 worker threads before a thread waits for the pool.
    engine = create_engine(
        "sqlite://", creator=lambda: sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=False),
        poolclass=QueuePool, pool_size=8, max_overflow=64, module=sqlite3,
    )

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        if not read_only:
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            # A removed document's text and path are overwritten in the file, not left in free space, whichever
            # library writes: Debian's builds do this by default, pysqlite3's and most others do not.
            cur.execute("PRAGMA secure_delete=ON")
        cur.execute("PRAGMA foreign_keys=ON")
        # Hybrid queries materialise their lexical matches in a temporary table (store/lexical.py: Matches).
        cur.execute("PRAGMA temp_store=MEMORY")
        cur.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        cur.close()

    return engine


def _alembic_config(connection: Any = None, version_schema: str | None = None) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if connection is not None:
        cfg.attributes["connection"] = connection
    cfg.attributes["version_table_schema"] = version_schema
    return cfg


def head_revision() -> str:
    """The newest schema revision this version knows."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
    if head is None:  # pragma: no cover - the package always ships migrations
        raise SchemaError("no migrations found")
    return head


def current_revision(engine: Engine, version_schema: str | None = None) -> str | None:
    """The schema revision stored in the database (in ``version_schema``'s ``alembic_version``, for an index
    that is a PostgreSQL schema), ``None`` for an empty one."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        opts = {"version_table_schema": version_schema} if version_schema else {}
        return MigrationContext.configure(conn, opts=opts).get_current_revision()


_REVISION_LINE = re.compile(r'^(down_revision|revision)\s*=\s*(?:"([^"]*)"|None)\s*$', re.MULTILINE)


@lru_cache(maxsize=1)
def _scanned_head() -> str | None:
    """The head revision read from the migration scripts' ``revision`` / ``down_revision`` lines without importing
    Alembic (which costs a one-shot query a tenth of a second); ``None`` when the scripts do not read as one
    straight chain, and Alembic decides."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in sorted((migrations_dir() / "versions").glob("*.py")):
        found = dict((k, v) for k, v in _REVISION_LINE.findall(script.read_text(encoding="utf-8")))
        if "revision" in found:
            revisions.add(found["revision"])
            if found.get("down_revision"):
                parents.add(found["down_revision"])
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def _stored_revision(engine: Engine, version_schema: str | None) -> str | None:
    """The revision in the database's ``alembic_version`` table by plain SQL, ``None`` if there is none."""
    table = "alembic_version"
    if version_schema:
        table = f"{engine.dialect.identifier_preparer.quote_schema(version_schema)}.{table}"
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql(f"SELECT version_num FROM {table}").fetchall()
    except DBAPIError:
        return None
    return rows[0][0] if len(rows) == 1 else None


def at_head(engine: Engine, version_schema: str | None = None) -> bool:
    """Whether the schema is at this version's head revision (read only, nothing changed)."""
    return _stored_revision(engine, version_schema) == _scanned_head()


def upgrade(engine: Engine, target: str = "head", version_schema: str | None = None, read_only: bool = False) -> None:
    """Bring the schema to ``target``; refuse a database written by a newer version. ``version_schema``: where
    the revision is kept (an index in a PostgreSQL schema keeps it there, never in another app's table on the
    search path). ``read_only``: a schema behind ``target`` is refused (``SchemaError``), never upgraded."""
    if target == "head":
        head = _scanned_head()
        if head is not None and _stored_revision(engine, version_schema) == head:
            return  # up to date: the common case, answered without Alembic
    from alembic import command
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(_alembic_config())
    current = current_revision(engine, version_schema)
    known = {rev.revision for rev in script.walk_revisions()}
    if current is not None and current not in known:
        raise SchemaError(
            f"the index uses schema revision '{current}', made by a newer searchapp; "
            f"this version knows up to '{script.get_current_head()}': upgrade searchapp"
        )
    if target == "head" and current == script.get_current_head():
        return
    if read_only:
        raise SchemaError(f"the index uses schema revision '{current}' and this version '{script.get_current_head()}': "
                          "the upgrade writes, which a read-only open cannot; open it for writing once (any ingest)")
    with _one_transaction(engine) as conn:
        command.upgrade(_alembic_config(conn, version_schema), target)


@contextlib.contextmanager
def _one_transaction(engine: Engine) -> Iterator[Connection]:
    """A connection whose every statement, DDL included, is in one transaction committed at the end.

    Python's sqlite3 before 3.12 begins a transaction only before DML, so each CREATE TABLE of a migration was
    its own commit: a process killed while creating an index left tables without a revision, and every later
    open failed ('table settings already exists'). SQLite's DDL is transactional once a BEGIN is issued; the
    driver's own transaction handling is set aside for the migration and restored before the connection goes
    back to the pool. Other databases begin a transaction for DDL by themselves."""
    if engine.dialect.name != "sqlite":
        with engine.begin() as conn:
            yield conn
        return
    with engine.connect() as conn:
        raw = conn.connection.driver_connection
        saved = raw.isolation_level
        raw.isolation_level = None  # the driver issues no BEGIN/COMMIT of its own; ours below
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
        finally:
            raw.isolation_level = saved
