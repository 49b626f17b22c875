"""The index database (SQLite): the record operations of ``store/records.py`` on SQLite, with the lexical index
(``store/lexical_index.py``; FTS5) kept in the same transactions, and migrations on open."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Select, Table, bindparam, func, select, text
from sqlalchemy.exc import DBAPIError, OperationalError

from searchapp.errors import SchemaError, StorageError
from searchapp.sqlite_driver import dbapi
from searchapp.store import schema
from searchapp.store.lexical_index import LexicalIndex, engine
from searchapp.store.records import Records
from searchapp.store.tables import tables


def has_settings(db_path: Path) -> bool:
    """Whether ``db_path`` holds an index: a database with its settings stored. Creating an index stores them
    last (after the model is loaded), so a database without them is a creation that was interrupted, to be
    created again, not an index built with default settings. Anything unreadable is left for
    ``SqliteRecords`` to report."""
    if not db_path.exists():
        return False
    sqlite3 = dbapi()
    try:
        conn = sqlite3.connect(schema.sqlite_uri(db_path, read_only=True), uri=True)  # never creates a file
        try:
            return conn.execute("SELECT 1 FROM settings LIMIT 1").fetchone() is not None
        finally:
            conn.close()
    except sqlite3.OperationalError as exc:
        return "no such table" not in str(exc)
    except sqlite3.Error:
        return True


def _rows_among(conn: Connection, sql: str, ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` (:meth:`SqliteRecords._among_json`) for the passages ``ids``, run on the driver's own
    connection."""
    ids_json = json.dumps([int(i) for i in ids])
    return conn.connection.driver_connection.execute(sql, (ids_json,)).fetchall()  # type: ignore[union-attr]


class SqliteRecords(Records):
    """The index database. Opening it runs pending migrations (``read_only``, or a folder that cannot be written:
    connections that never write, and a schema behind refused instead)."""

    tables = tables("sqlite")

    def __init__(self, db_path: Path, read_only: bool = False, lexical_index: LexicalIndex | None = None) -> None:
        self.path = db_path
        # The lexical engine kept in step inside the record transactions (store/lexical_index.py).
        self.lexical_index = lexical_index or engine("fts5")
        # A folder this process cannot write is still readable: opened read-only whatever was asked.
        self.db_read_only = read_only or not schema.writable(db_path.parent)
        self.engine = schema.make_engine(db_path, self.db_read_only)
        try:
            schema.upgrade(self.engine, read_only=self.db_read_only)
        except DBAPIError as exc:
            self.engine.dispose()
            reason = str(exc.orig) if exc.orig is not None else str(exc)
            raise SchemaError(f"{db_path}: cannot open the index database: {reason}") from exc
        except BaseException:
            self.engine.dispose()
            raise

    def close(self) -> None:
        """Release connections."""
        self.engine.dispose()

    def connect(self) -> Connection:
        """A read connection (caller closes it), e.g. for lexical search."""
        return self.engine.connect()

    # -- the record hooks ----------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _begin(self) -> Iterator[Connection]:
        """A write transaction. A failed write (disk full, I/O error, read-only file) rolls the whole transaction
        back and is raised as ``StorageError``: the database stays as it was before it."""
        try:
            try:
                with self.engine.begin() as conn:
                    yield conn
            except BaseException:
                self.lexical_index.abandoned()
                raise
            # Committed: a lexical index kept outside the transaction follows it now (store/lexical_index.py).
            self.lexical_index.committed()
        except OperationalError as exc:
            reason = str(exc.orig) if exc.orig is not None else str(exc)
            raise StorageError(f"{self.path}: cannot write the index database: {reason}") from exc

    def _claim_ids(self, conn: Connection) -> None:
        # A write first: SQLite's write lock is then held, so the next ids are ours to assign (_next_ids), which
        # turns a round trip per row into one executemany per table.
        conn.execute(text("UPDATE settings SET key = key WHERE 0"))

    def _next_ids(self, conn: Connection, table: Table, n: int) -> list[int]:
        # AUTOINCREMENT keeps the largest id ever given in sqlite_sequence: an id is never reused.
        seq = conn.execute(text("SELECT seq FROM sqlite_sequence WHERE name = :t"), {"t": table.name}).scalar()
        top = int(conn.execute(select(func.coalesce(func.max(table.c.id), 0))).scalar_one())
        first = max(int(seq or 0), top) + 1
        return list(range(first, first + n))

    def _unindex(self, conn: Connection, doc_ids: Sequence[int]) -> list[int]:
        p = self.tables.passages
        rows = conn.execute(select(p.c.id, p.c.text, p.c.section).where(p.c.document_id.in_(doc_ids))).all()
        ids = [int(r[0]) for r in rows]
        # A lexical index may need the indexed values to undo them (FTS5 does).
        self.lexical_index.remove(conn, ids, [r[1] for r in rows], [r[2] for r in rows])
        return ids

    def _index(self, conn: Connection, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> None:
        self.lexical_index.add(conn, ids, texts, sections)

    def _hydrate_rows(self, conn: Connection, ids: Sequence[int]) -> list[tuple[Any, ...]]:
        # Every query hydrates its hits, and SQLAlchemy's statement and result layers cost several times what
        # SQLite takes to read the passages (docs/performance.md, "Query path on an AVX2 CPU"): the compiled text
        # runs on the driver's connection.
        return _rows_among(conn, self._hydrate_sql, ids)

    def _documents_of_rows(self, conn: Connection, ids: Sequence[int]) -> list[tuple[Any, ...]]:
        return _rows_among(conn, self._documents_of_sql, ids)

    @cached_property
    def _hydrate_sql(self) -> str:
        return self._among_json(self._hydrate_columns)

    @cached_property
    def _documents_of_sql(self) -> str:
        p = self.tables.passages
        return self._among_json(select(p.c.id, p.c.document_id))

    def _among_json(self, query: Select[Any]) -> str:
        """``query`` restricted to the passages whose ids are bound as one JSON array, compiled: the same text
        for any number of them."""
        among = select(func.json_each(bindparam("ids")).table_valued("value").c.value)
        return str(query.where(self.tables.passages.c.id.in_(among)).compile(dialect=self.engine.dialect))

    @contextlib.contextmanager
    def _snapshot(self, conn: Connection) -> Iterator[Connection]:
        # pysqlite opens no transaction for reads: without this each statement would see its own snapshot (WAL: a
        # writer goes on meanwhile, unseen). The connection's close ends it.
        conn.exec_driver_sql("BEGIN")
        yield conn
