"""The index database (SQLite): documents, passages with their vectors, settings, and the FTS5 index kept in the
same transactions."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Connection, Table, delete, func, insert, select, text, update
from sqlalchemy.exc import DBAPIError, OperationalError

from searchapp.errors import SchemaError, StorageError
from searchapp.store import lexical, schema
from searchapp.store.base import STREAM_ROWS
from searchapp.store.tables import DocumentRow, PassageRow, Setting
from searchapp.types import (
    DocumentPassages,
    ExportedDocument,
    ExportedPassage,
    NewDocument,
    PassageRecord,
    StoredDocument,
    dump_metadata,
)

_DOCS: Table = DocumentRow.__table__  # type: ignore[assignment]
_PASSAGES: Table = PassageRow.__table__  # type: ignore[assignment]
_SETTINGS: Table = Setting.__table__  # type: ignore[assignment]


def has_settings(db_path: Path) -> bool:
    """Whether ``db_path`` holds an index: a database with its settings stored. Creating an index stores them
    last (after the model is loaded), so a database without them is a creation that was interrupted, to be
    created again, not an index built with default settings. Anything unreadable is left for
    ``Database`` to report."""
    if not db_path.exists():
        return False
    try:
        conn = sqlite3.connect(db_path.resolve().as_uri() + "?mode=rw", uri=True)  # never creates a file
        try:
            return conn.execute("SELECT 1 FROM settings LIMIT 1").fetchone() is not None
        finally:
            conn.close()
    except sqlite3.OperationalError as exc:
        return "no such table" not in str(exc)
    except sqlite3.Error:
        return True


class Database:
    """The index database. Opening it runs pending migrations."""

    def __init__(self, db_path: Path) -> None:
        self.path = db_path
        self.engine = schema.make_engine(db_path)
        try:
            schema.upgrade(self.engine)
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

    @contextlib.contextmanager
    def _begin(self) -> Iterator[Connection]:
        """A write transaction. A failed write (disk full, I/O error, read-only file) rolls the whole transaction
        back and is raised as ``StorageError``: the database stays as it was before it."""
        try:
            with self.engine.begin() as conn:
                yield conn
        except OperationalError as exc:
            reason = str(exc.orig) if exc.orig is not None else str(exc)
            raise StorageError(f"{self.path}: cannot write the index database: {reason}") from exc

    def settings(self) -> dict[str, str]:
        """All settings rows (JSON text values)."""
        with self.engine.connect() as conn:
            return {k: v for k, v in conn.execute(select(_SETTINGS.c.key, _SETTINGS.c.value))}

    def put_settings(self, rows: dict[str, str]) -> None:
        """Insert or replace settings rows."""
        with self._begin() as conn:
            for key, value in rows.items():
                conn.execute(delete(_SETTINGS).where(_SETTINGS.c.key == key))
                conn.execute(insert(_SETTINGS).values(key=key, value=value))

    def documents(self) -> dict[str, StoredDocument]:
        """Every indexed document by path (or text id)."""
        cols = (_DOCS.c.id, _DOCS.c.path, _DOCS.c.mtime, _DOCS.c.size, _DOCS.c.sha256, _DOCS.c.metadata,
                _DOCS.c.source, _DOCS.c.title, _DOCS.c.indexed_at)
        with self.engine.connect() as conn:
            return {r.path: StoredDocument(*r) for r in conn.execute(select(*cols))}

    def is_empty(self) -> bool:
        """Whether no passage is stored (one indexed lookup, where counting scans the table)."""
        with self.engine.connect() as conn:
            return conn.execute(select(_PASSAGES.c.id).limit(1)).first() is None

    def counts(self) -> tuple[int, int]:
        """(documents, passages)."""
        with self.engine.connect() as conn:
            docs = conn.execute(select(func.count()).select_from(_DOCS)).scalar_one()
            passages = conn.execute(select(func.count()).select_from(_PASSAGES)).scalar_one()
        return int(docs), int(passages)

    def touch(self, doc_id: int, mtime: float) -> None:
        """Record a new modification time for a document whose content did not change."""
        with self._begin() as conn:
            conn.execute(update(_DOCS).where(_DOCS.c.id == doc_id).values(mtime=mtime))

    def set_metadata(self, doc_id: int, metadata: Mapping[str, Any], title: str) -> None:
        """Replace a document's metadata and title (its text and passages unchanged)."""
        with self._begin() as conn:
            conn.execute(
                update(_DOCS).where(_DOCS.c.id == doc_id).values(metadata=dump_metadata(metadata), title=title)
            )

    def document_ids(self, keys: Sequence[str], source: str | None = None) -> dict[str, int]:
        """Key -> id of the documents with these paths or text ids (of ``source`` only, if given); unknown keys
        are left out. A keyed lookup: callers need not load every document."""
        out: dict[str, int] = {}
        query = select(_DOCS.c.path, _DOCS.c.id)
        if source is not None:
            query = query.where(_DOCS.c.source == source)
        with self.engine.connect() as conn:
            for i in range(0, len(keys), lexical.MAX_PARAMS):
                chunk = list(keys[i : i + lexical.MAX_PARAMS])
                out.update((str(k), int(v)) for k, v in conn.execute(query.where(_DOCS.c.path.in_(chunk))))
        return out

    def write(self, remove: Sequence[int], add: Sequence[NewDocument]) -> tuple[list[int], list[np.ndarray]]:
        """Remove documents by id and add new ones, in one transaction.

        Returns the removed passage ids and, per added document, its new passage ids (int64 ``(n,)``).
        """
        with self._begin() as conn:
            # Take the write lock first: id assignment in _add relies on it.
            conn.execute(text("UPDATE settings SET key = key WHERE 0"))
            removed = self._remove(conn, remove)
            added = self._add(conn, add)
        return removed, added

    def _remove(self, conn: Connection, doc_ids: Sequence[int]) -> list[int]:
        if not doc_ids:
            return []
        rows = conn.execute(
            select(_PASSAGES.c.id, _PASSAGES.c.text).where(_PASSAGES.c.document_id.in_(doc_ids))
        ).all()
        ids = [r[0] for r in rows]
        lexical.unindex_passages(conn, ids, [r[1] for r in rows])
        conn.execute(delete(_PASSAGES).where(_PASSAGES.c.document_id.in_(doc_ids)))
        conn.execute(delete(_DOCS).where(_DOCS.c.id.in_(doc_ids)))
        return ids

    def _add(self, conn: Connection, items: Sequence[NewDocument]) -> list[np.ndarray]:
        if not items:
            return []
        # Called after this transaction's first write, so SQLite's write lock is held and the next ids are
        # ours to assign: that turns a round trip per row into one executemany per table.
        doc_first = int(conn.execute(select(func.coalesce(func.max(_DOCS.c.id), 0))).scalar_one()) + 1
        seq = conn.execute(text("SELECT seq FROM sqlite_sequence WHERE name = 'passages'")).scalar()
        top = int(conn.execute(select(func.coalesce(func.max(_PASSAGES.c.id), 0))).scalar_one())
        next_pid = max(int(seq or 0), top) + 1
        doc_rows: list[dict[str, object]] = []
        passage_rows: list[dict[str, object]] = []
        all_ids: list[np.ndarray] = []
        indexed_at = time.time()  # one write, one time: its documents were indexed together
        for n, item in enumerate(items):
            doc, doc_id = item.document, doc_first + n
            doc_rows.append(
                {"id": doc_id, "path": doc.path, "title": doc.title, "mtime": doc.mtime, "size": doc.size,
                 "sha256": doc.sha256, "n_chars": len(doc.text), "metadata": dump_metadata(doc.metadata),
                 "source": doc.source, "indexed_at": indexed_at}
            )
            vectors = np.ascontiguousarray(item.vectors, dtype=np.float32)
            ids = np.arange(next_pid, next_pid + len(item.spans), dtype=np.int64)
            next_pid += len(item.spans)
            for i, span in enumerate(item.spans):
                passage_rows.append(
                    {"id": int(ids[i]), "document_id": doc_id, "ordinal": i, "start": span.start, "end": span.end,
                     "n_tokens": span.n_tokens, "text": doc.text[span.start : span.end],
                     "vector": vectors[i].tobytes()}
                )
            all_ids.append(ids)
        conn.execute(insert(_DOCS), doc_rows)
        if passage_rows:
            conn.execute(insert(_PASSAGES), passage_rows)
            lexical.index_passages(
                conn, [int(pid) for ids in all_ids for pid in ids], [str(r["text"]) for r in passage_rows]
            )
        return all_ids

    def hydrate(self, ids: Sequence[int], conn: Connection | None = None) -> dict[int, PassageRecord]:
        """Passages with their document's path, title, metadata and source, by id (unknown ids are left out).

        ``conn``: a connection the caller already holds (a search holds one; taking a second from the pool per
        query can exhaust it when many threads search at once).
        """
        if not ids:
            return {}
        query = (
            select(_PASSAGES.c.id, _DOCS.c.path, _DOCS.c.title, _PASSAGES.c.start, _PASSAGES.c.end,
                   _PASSAGES.c.text, _DOCS.c.metadata, _DOCS.c.source)
            .join(_DOCS, _DOCS.c.id == _PASSAGES.c.document_id)
            .where(_PASSAGES.c.id.in_(list(ids)))
        )
        if conn is not None:
            return {r[0]: PassageRecord(*r[:6], json.loads(r[6]), r[7]) for r in conn.execute(query)}
        with self.engine.connect() as own:
            return self.hydrate(ids, own)

    def document_passages(self, path: str, start: int, end: int) -> DocumentPassages | None:
        """The document with this path (or text id) and its passages overlapping ``[start, end)``, in text order;
        ``None`` if there is no such document."""
        with self.engine.connect() as conn:
            doc = conn.execute(
                select(_DOCS.c.id, _DOCS.c.path, _DOCS.c.title, _DOCS.c.source, _DOCS.c.metadata, _DOCS.c.n_chars)
                .where(_DOCS.c.path == path)
            ).first()
            if doc is None:
                return None
            rows = conn.execute(
                select(_PASSAGES.c.id, _PASSAGES.c.start, _PASSAGES.c.end, _PASSAGES.c.text)
                .where(_PASSAGES.c.document_id == doc.id, _PASSAGES.c.end > start, _PASSAGES.c.start < end)
                .order_by(_PASSAGES.c.start, _PASSAGES.c.id)
            ).all()
        return DocumentPassages(doc.path, doc.title, doc.source, json.loads(doc.metadata), int(doc.n_chars),
                                passages=[(int(i), int(s), int(e), str(t)) for i, s, e, t in rows])

    def passage_documents(self) -> dict[int, str]:
        """Passage id -> its document's path (or record key)."""
        query = select(_PASSAGES.c.id, _DOCS.c.path).join(_DOCS, _DOCS.c.id == _PASSAGES.c.document_id)
        with self.engine.connect() as conn:
            return {int(pid): str(path) for pid, path in conn.execute(query)}

    def export(self, vectors: bool = False) -> Iterator[ExportedDocument | ExportedPassage]:
        """Every document by path, then every passage by id (with its vector if ``vectors``), from one read
        transaction (WAL: a writer goes on meanwhile, unseen), fetched ``STREAM_ROWS`` at a time."""
        docs = select(_DOCS.c.path, _DOCS.c.source, _DOCS.c.title, _DOCS.c.metadata, _DOCS.c.size, _DOCS.c.mtime,
                      _DOCS.c.sha256, _DOCS.c.indexed_at).order_by(_DOCS.c.path)
        cols = [_PASSAGES.c.id, _DOCS.c.path, _PASSAGES.c.start, _PASSAGES.c.end, _PASSAGES.c.text]
        passages = (select(*cols, *([_PASSAGES.c.vector] if vectors else []))
                    .join(_DOCS, _DOCS.c.id == _PASSAGES.c.document_id).order_by(_PASSAGES.c.id))
        with self.engine.connect() as conn:
            # pysqlite opens no transaction for reads: without this each statement would see its own snapshot.
            conn.exec_driver_sql("BEGIN")
            streamed = conn.execution_options(yield_per=STREAM_ROWS)
            for path, source, title, meta, size, mtime, sha, at in streamed.execute(docs):
                yield ExportedDocument(path, source, title, json.loads(meta), int(size), float(mtime), sha,
                                       None if at is None else float(at))
            for row in streamed.execute(passages):
                vec = np.frombuffer(row[5], dtype=np.float32) if vectors else None
                yield ExportedPassage(int(row[0]), row[1], int(row[2]), int(row[3]), row[4], vec)

    def id_summary(self) -> tuple[int, int]:
        """(passage count, largest passage id or 0): enough to tell whether a vector file is current."""
        with self.engine.connect() as conn:
            n, top = conn.execute(select(func.count(), func.max(_PASSAGES.c.id))).one()
        return int(n), int(top or 0)

    def vectors(self, dimension: int, batch: int = 10000) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """All stored vectors as (ids int64 ``(n,)``, vectors float32 ``(n, d)``) batches, in id order."""
        last = 0
        with self.engine.connect() as conn:
            while True:
                rows = conn.execute(
                    select(_PASSAGES.c.id, _PASSAGES.c.vector)
                    .where(_PASSAGES.c.id > last)
                    .order_by(_PASSAGES.c.id)
                    .limit(batch)
                ).all()
                if not rows:
                    return
                ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dimension)
                yield ids, vecs
                last = int(ids[-1])

    def connect(self) -> Connection:
        """A read connection (caller closes it), e.g. for lexical search."""
        return self.engine.connect()
