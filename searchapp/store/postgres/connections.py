"""The connections of a PostgreSQL index: a pool for queries and a connection of its own for each write, both
resolving the index's tables in its schema; a pooled connection is used only while its backend postdates the
BM25 index's last rebuild."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, Engine, Table, create_engine, event, select
from sqlalchemy.engine import URL
from sqlalchemy.pool import NullPool

from searchapp.errors import StorageError
from searchapp.store.postgres import vector
from searchapp.store.postgres.location import session_options

# The settings row counting the BM25 index's rebuilds (not an IndexConfig setting).
GENERATION_KEY = "bm25_generation"


def make_engines(url: URL, schema: str, pool_size: int) -> tuple[Engine, Engine]:
    """The query engine (``pool_size`` pooled connections, as many again under load) and the write engine; on
    both, a NumPy array bound as a parameter is a pgvector value (``vector.register``), and the session's options
    are :func:`session_options`' (``PGOPTIONS``, the URL's ``options=``, then the index's search path)."""
    # Every connection resolves our tables in this index's schema, with the user's options as well.
    options = {"options": session_options(url, schema)}
    url = url.difference_update_query(["options"])
    engine = create_engine(url, connect_args=options, pool_size=pool_size, max_overflow=pool_size,
                           pool_pre_ping=True)
    # Writes (and DDL) get a connection of their own, closed after use, never one a query will reuse: a
    # pg_textsearch 1.0.0 backend that has written to a BM25-indexed table scores later queries wrongly (no
    # rows, or 0 for every row, on some of its statements; tests/integration/test_postgres.py).
    write_engine = create_engine(url, connect_args=options, poolclass=NullPool)
    for each in (engine, write_engine):
        event.listen(each, "connect", vector.register)
    return engine, write_engine


def track_generation(engine: Engine, settings: Table) -> None:
    """On each new connection of ``engine``: remember which BM25 rebuild its backend started after (the
    ``settings`` table's ``GENERATION_KEY`` row)."""
    sql = str(select(settings.c.value).where(settings.c.key == GENERATION_KEY).compile(
        dialect=engine.dialect, compile_kwargs={"literal_binds": True}))

    def tag(dbapi_conn: Any, record: Any) -> None:
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

    event.listen(engine, "connect", tag)


def fresh_connection(engine: Engine, generation: Callable[[Connection], str | None], location: str) -> Connection:
    """A pooled connection of ``engine`` opened after the BM25 index's last rebuild (``generation``: the
    ``GENERATION_KEY`` row read on a connection): a pg_textsearch 1.0.0 backend keeps the corpus statistics it
    saw before another session's REINDEX (its scores then differ from every newer backend's;
    tests/integration/test_postgres.py), so one that predates a rebuild is replaced."""
    for _ in range(2 * engine.pool.size() + 2):  # type: ignore[attr-defined]
        conn = engine.connect()
        try:
            current = generation(conn)
            conn.rollback()
        except BaseException:
            conn.close()
            raise
        if conn.connection.info.get("bm25_generation") == current:
            return conn
        conn.invalidate()  # its backend predates the rebuild: closed, never pooled again
        conn.close()
    raise StorageError(f"{location}: no connection opened after the last BM25 rebuild could be had")
