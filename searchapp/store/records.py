"""The record operations of an index, written once in SQLAlchemy Core over ``store/tables.py`` for both dialects:
settings, documents, passages with their vectors, hydration and export.

:class:`Records` implements the record half of the storage seam (``store/base.py``: settings, documents,
``write``, hydration, ``export``, counts); a backend inherits it and adds what is its own (``store/sqlite.py``:
SQLite with FTS5, and ``store/folder.py`` on top: the FAISS file and a file lock; ``store/postgres/``: a
connection pool, pg_textsearch, HNSW, an advisory lock). Where the engines really differ a backend answers a
small hook: how a write transaction starts and takes the writer's place (:meth:`_begin`, :meth:`_claim_ids`),
how new ids are assigned (:meth:`_next_ids`), what its lexical index needs when passages come and go
(:meth:`_unindex`, :meth:`_index`), and how a read sees one snapshot (:meth:`_snapshot`). The vector value is
the column type's business (``tables.Embedding``; PostgreSQL's ``PgVector``).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np
from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Engine,
    Select,
    Table,
    Text,
    and_,
    bindparam,
    cast,
    delete,
    func,
    literal,
    select,
    update,
)

from searchapp.collection import KEY as COLLECTION_KEY
from searchapp.collection import of_metadata
from searchapp.lines import Place, places
from searchapp.store.base import STREAM_ROWS
from searchapp.store.rows import (
    DocumentPassages,
    NewDocument,
    PassageRecord,
    StoredDocument,
    StoredPassage,
    dump_metadata,
)
from searchapp.store.tables import Tables
from searchapp.types import ExportedDocument, ExportedPassage, names_no_document

# Values bound in one IN (...) list: SQLite limits host parameters per statement; stay well under its old default.
MAX_PARAMS = 900


class Records(ABC):
    """The record operations, given a read ``engine``, the dialect's ``tables`` and the hooks below. Listed before
    :class:`~searchapp.store.base.Stores` among a backend's bases, its methods are the seam's record methods."""

    engine: Engine
    tables: Tables
    # Settings rows a backend keeps for itself, not index settings: never returned by :meth:`settings`.
    private_settings: tuple[str, ...] = ()

    # -- dialect hooks -------------------------------------------------------------------------------------

    @abstractmethod
    def _begin(self) -> contextlib.AbstractContextManager[Connection]:
        """A write transaction; a failed write rolls it back and is raised as ``StorageError``."""

    def _claim_ids(self, conn: Connection) -> None:  # noqa: B027 - a hook: most engines need nothing here
        """Called first in a write transaction that adds or removes documents, before ids are assigned."""

    @abstractmethod
    def _next_ids(self, conn: Connection, table: Table, n: int) -> list[int]:
        """``n`` new ids of ``table``, ascending, never used before."""

    @abstractmethod
    def _unindex(self, conn: Connection, doc_ids: Sequence[int]) -> list[int]:
        """What the lexical index needs before these documents' passages are deleted; returns the passage ids
        the backend's vector index must drop (empty where the vectors live in the rows)."""

    def _index(  # noqa: B027 - a hook
        self, conn: Connection, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]
    ) -> None:
        """What the lexical index needs once passages (texts, section paths) are inserted (nothing where it
        indexes rows itself)."""

    def _among(self, column: ColumnElement[Any], name: str) -> ColumnElement[bool]:
        """``column`` is one of a list of values bound under ``name`` (an expanding ``IN``; PostgreSQL binds an
        array)."""
        return column.in_(bindparam(name, expanding=True))

    @abstractmethod
    def _snapshot(self, conn: Connection) -> contextlib.AbstractContextManager[Connection]:
        """``conn`` reading one snapshot of every table until the block ends."""

    # -- settings ------------------------------------------------------------------------------------------

    def settings(self) -> dict[str, str]:
        s = self.tables.settings
        query = select(s.c.key, s.c.value)
        if self.private_settings:
            query = query.where(s.c.key.not_in(self.private_settings))
        with self.engine.connect() as conn:
            return {k: v for k, v in conn.execute(query)}

    def put_settings(self, rows: Mapping[str, str]) -> None:
        if not rows:
            return
        with self._begin() as conn:
            self._upsert_settings(conn, dict(rows))

    def _upsert_settings(self, conn: Connection, rows: Mapping[str, Any]) -> None:
        s = self.tables.settings
        stmt = _upsert(conn, s)
        conn.execute(stmt.on_conflict_do_update(index_elements=[s.c.key], set_={"value": stmt.excluded.value}),
                     [{"key": k, "value": v} for k, v in rows.items()])

    def _setting(self, conn: Connection, key: str) -> str | None:
        """One settings row's value (private ones included), on a connection the caller holds."""
        return conn.execute(self._setting_query, {"key": key}).scalar()

    @cached_property
    def _setting_query(self) -> Select[Any]:
        # Built once: a PostgreSQL reader asks for one on every read session (postgres.py: _fresh_connection).
        s = self.tables.settings
        return select(s.c.value).where(s.c.key == bindparam("key"))

    def _add_to_setting(self, conn: Connection, key: str, n: int) -> None:
        """Add ``n`` to a counter kept as a settings row (made at ``n`` if missing)."""
        s = self.tables.settings
        stmt = _upsert(conn, s).values(key=key, value=str(n))
        conn.execute(stmt.on_conflict_do_update(
            index_elements=[s.c.key], set_={"value": cast(cast(s.c.value, BigInteger) + n, Text)}
        ))

    def _drop_setting(self, conn: Connection, key: str) -> None:
        s = self.tables.settings
        conn.execute(delete(s).where(s.c.key == key))

    # -- documents -----------------------------------------------------------------------------------------

    def _document_columns(self) -> tuple[Any, ...]:
        d = self.tables.documents
        return (d.c.id, d.c.path, d.c.mtime, d.c.size, d.c.sha256, d.c.metadata, d.c.source, d.c.title,
                d.c.indexed_at, d.c.passages_version, d.c.n_passages)

    def documents(self) -> dict[str, StoredDocument]:
        with self.engine.connect() as conn:
            return {r.path: StoredDocument(*r) for r in conn.execute(select(*self._document_columns()))}

    def document_page(self, offset: int = 0, limit: int | None = None,
                      collection: str | None = None) -> list[StoredDocument]:
        d = self.tables.documents
        query = select(*self._document_columns()).order_by(d.c.path).offset(offset).limit(limit)
        if collection is not None:
            query = query.where(self._in_collection(collection))
        with self.engine.connect() as conn:
            return [StoredDocument(*r) for r in conn.execute(query)]

    def _in_collection(self, name: str) -> ColumnElement[bool]:
        """A document's metadata naming the collection ``name`` as a JSON string, as a filter compares it
        (``store/filter_sql.py``: a number 3 is not the collection "3")."""
        metadata = self.tables.documents.c.metadata
        if self.engine.dialect.name == "postgresql":
            from sqlalchemy.dialects import postgresql  # here: a folder index's process need not import it

            return cast(metadata, postgresql.JSONB).op("->")(COLLECTION_KEY) == func.to_jsonb(cast(literal(name), Text))
        return and_(func.json_type(metadata, f'$."{COLLECTION_KEY}"') == "text",
                    func.json_extract(metadata, f'$."{COLLECTION_KEY}"') == name)

    def document_ids(self, keys: Sequence[str], source: str | None = None) -> dict[str, int]:
        """A keyed lookup, ``MAX_PARAMS`` keys a statement: callers need not load every document."""
        d = self.tables.documents
        keys = [k for k in keys if not names_no_document(k)]
        query = select(d.c.path, d.c.id)
        if source is not None:
            query = query.where(d.c.source == source)
        out: dict[str, int] = {}
        with self.engine.connect() as conn:
            for i in range(0, len(keys), MAX_PARAMS):
                chunk = list(keys[i : i + MAX_PARAMS])
                out.update((str(k), int(v)) for k, v in conn.execute(query.where(d.c.path.in_(chunk))))
        return out

    def touch(self, doc_id: int, mtime: float, passages_version: int | None = None,
              starts: Sequence[Place] | None = None) -> None:
        """Record a new mtime (and, given, the reader version that found its passages unchanged, and where each of
        them stands, in order: line and column, source lines and page)."""
        d, p = self.tables.documents, self.tables.passages
        values: dict[str, object] = {"mtime": mtime}
        if passages_version is not None:
            values["passages_version"] = passages_version
        with self._begin() as conn:
            conn.execute(update(d).where(d.c.id == doc_id).values(**values))
            if starts:
                conn.execute(
                    update(p).where(p.c.document_id == doc_id, p.c.ordinal == bindparam("i"))
                    .values(start_line=bindparam("line"), start_column=bindparam("column"),
                            source_lines=bindparam("lines"), page=bindparam("page")),
                    [{"i": i, "line": at.line, "column": at.column, "lines": at.source_lines, "page": at.page}
                     for i, at in enumerate(starts)],
                )

    def passage_layout(self, doc_id: int) -> list[tuple[int, int, str]]:
        """``(start, end, section)`` of each of a document's passages, in order."""
        p = self.tables.passages
        query = select(p.c.start, p.c.end, p.c.section).where(p.c.document_id == doc_id).order_by(p.c.ordinal)
        with self.engine.connect() as conn:
            return [(int(s), int(e), str(sec)) for s, e, sec in conn.execute(query)]

    def passage_parts(self, doc_ids: Sequence[int]) -> list[tuple[int, str, str, int]]:
        """``(passage id, text, section path, word pieces)`` of every passage of the documents ``doc_ids``."""
        p = self.tables.passages
        query = select(p.c.id, p.c.text, p.c.section, p.c.n_tokens)
        out: list[tuple[int, str, str, int]] = []
        with self.engine.connect() as conn:
            for at in range(0, len(doc_ids), MAX_PARAMS):
                chunk = list(doc_ids[at : at + MAX_PARAMS])
                rows = conn.execute(query.where(p.c.document_id.in_(chunk)).order_by(p.c.document_id, p.c.ordinal))
                out.extend((int(i), str(t), str(sec), int(n)) for i, t, sec, n in rows)
        return out

    def set_metadata(self, doc_id: int, metadata: Mapping[str, Any], title: str) -> None:
        d = self.tables.documents
        with self._begin() as conn:
            before = self._collections_of(conn, [doc_id])
            after = [(of_metadata(metadata), n) for _, n in before]
            conn.execute(update(d).where(d.c.id == doc_id).values(metadata=dump_metadata(metadata), title=title))
            self._count_collections(conn, added=after, removed=before)

    def is_empty(self) -> bool:
        """One indexed lookup, where counting scans the table."""
        p = self.tables.passages
        with self.engine.connect() as conn:
            return conn.execute(select(p.c.id).limit(1)).first() is None

    def counts(self) -> tuple[int, int]:
        t = self.tables
        with self.engine.connect() as conn:
            docs = conn.execute(select(func.count()).select_from(t.documents)).scalar_one()
            passages = conn.execute(select(func.count()).select_from(t.passages)).scalar_one()
        return int(docs), int(passages)

    # -- writing -------------------------------------------------------------------------------------------

    def write(self, remove: Sequence[int], add: Sequence[NewDocument]) -> None:
        self.write_rows(remove, add)

    def write_rows(self, remove: Sequence[int], add: Sequence[NewDocument]) -> tuple[list[int], list[np.ndarray]]:
        """Remove documents by id and add new ones with their passages, in one transaction. Returns the removed
        passage ids the vector index must drop (:meth:`_unindex`) and, per added document, its new passage ids
        (int64 ``(n,)``)."""
        with self._begin() as conn:
            self._claim_ids(conn)
            removed = self._remove(conn, remove)
            added = self._add(conn, add)
        return removed, added

    def _remove(self, conn: Connection, doc_ids: Sequence[int]) -> list[int]:
        if not doc_ids:
            return []
        t = self.tables
        removed = self._unindex(conn, doc_ids)
        self._count_collections(conn, removed=self._collections_of(conn, doc_ids))
        conn.execute(delete(t.passages).where(t.passages.c.document_id.in_(doc_ids)))
        conn.execute(delete(t.documents).where(t.documents.c.id.in_(doc_ids)))
        return removed

    def _add(self, conn: Connection, items: Sequence[NewDocument]) -> list[np.ndarray]:
        if not items:
            return []
        t = self.tables
        doc_ids = self._next_ids(conn, t.documents, len(items))
        pids = np.asarray(self._next_ids(conn, t.passages, sum(len(item.spans) for item in items)), dtype=np.int64)
        doc_rows: list[dict[str, object]] = []
        passage_rows: list[dict[str, object]] = []
        texts: list[str] = []
        section_of: list[str] = []
        all_ids: list[np.ndarray] = []
        indexed_at = time.time()  # one write, one time: its documents were indexed together
        at = 0
        for doc_id, item in zip(doc_ids, items, strict=True):
            doc = item.document
            doc_rows.append(
                {"id": doc_id, "path": doc.path, "title": doc.title, "mtime": doc.mtime, "size": doc.size,
                 "sha256": doc.sha256, "n_chars": len(doc.text), "metadata": dump_metadata(doc.metadata),
                 "source": doc.source, "indexed_at": indexed_at, "passages_version": item.passages_version,
                 "n_passages": len(item.spans)}
            )
            ids = pids[at : at + len(item.spans)]
            at += len(item.spans)
            vectors = np.asarray(item.vectors, dtype=np.float32)
            sections = item.sections or [""] * len(item.spans)
            # Counted here, from the whole text: the whitespace between passages, and so its lines, is not stored.
            starts = places(doc.text, [s.start for s in item.spans], [s.end for s in item.spans],
                            doc.source_lines, doc.pages)
            for i, (span, section, where) in enumerate(zip(item.spans, sections, starts, strict=True)):
                passage = doc.text[span.start : span.end]
                texts.append(passage)
                section_of.append(section)
                passage_rows.append(
                    {"id": int(ids[i]), "document_id": doc_id, "ordinal": i, "start": span.start, "end": span.end,
                     "n_tokens": span.n_tokens, "text": passage, "section": section, "vector": vectors[i],
                     "start_line": where.line, "start_column": where.column,
                     "source_lines": where.source_lines, "page": where.page}
                )
            all_ids.append(ids)
        self._insert(conn, t.documents, doc_rows)
        self._count_collections(conn, added=[(of_metadata(i.document.metadata), len(i.spans)) for i in items])
        if passage_rows:
            self._insert(conn, t.passages, passage_rows)
            self._index(conn, pids.tolist(), texts, section_of)
        return all_ids

    def _collections_of(self, conn: Connection, doc_ids: Sequence[int]) -> list[tuple[str | None, int]]:
        """``(collection or None, passages)`` of each of the documents ``doc_ids``."""
        d = self.tables.documents
        rows = conn.execute(select(d.c.metadata, d.c.n_passages).where(d.c.id.in_(doc_ids)))
        return [(of_metadata(json.loads(m)), int(n or 0)) for m, n in rows]

    def _count_collections(self, conn: Connection, added: Iterable[tuple[str | None, int]] = (),
                           removed: Iterable[tuple[str | None, int]] = ()) -> None:
        """Keep ``collection_counts`` in step with documents ``added`` and ``removed`` (``(collection, passages)``
        each, ``None`` for none), in the caller's transaction."""
        change: dict[str, list[int]] = {}
        for sign, docs in ((1, added), (-1, removed)):
            for name, n in docs:
                if name is not None:
                    tally = change.setdefault(name, [0, 0])
                    tally[0] += sign
                    tally[1] += sign * n
        rows = [{"name": k, "documents": v[0], "passages": v[1]} for k, v in change.items() if v != [0, 0]]
        if not rows:
            return
        c = self.tables.collection_counts
        upsert = _upsert(conn, c)
        conn.execute(upsert.on_conflict_do_update(index_elements=[c.c.name], set_={
            "documents": c.c.documents + upsert.excluded.documents,
            "passages": c.c.passages + upsert.excluded.passages}), rows)
        conn.execute(delete(c).where(c.c.documents <= 0))

    def document_sha256(self, key: str) -> str | None:
        """The content hash recorded for the document ``key`` (a file's path or a text's id), ``None`` for none."""
        if names_no_document(key):
            return None
        d = self.tables.documents
        with self.engine.connect() as conn:
            found = conn.execute(select(d.c.sha256).where(d.c.path == key)).first()
        return None if found is None else str(found[0])

    def holds_prefix(self, prefix: str) -> bool:
        """Whether some document's key (a file's path or a text's id) starts with ``prefix``, as a filter's
        ``path_prefix`` compares: exactly, case and all."""
        d = self.tables.documents
        query = select(d.c.id).where(func.substr(d.c.path, 1, len(prefix)) == prefix).limit(1)
        with self.engine.connect() as conn:
            return conn.execute(query).first() is not None

    def file_folder(self) -> str | None:
        """The deepest folder holding every indexed file (``None`` without files): the common prefix of the
        first and last path in code point order, which every path between them shares."""
        d = self.tables.documents
        path = d.c.path.collate("C") if self.engine.dialect.name == "postgresql" else d.c.path
        query = select(func.min(path), func.max(path)).where(d.c.source == "file")
        with self.engine.connect() as conn:
            first, last = conn.execute(query).one()
        if first is None:
            return None
        common = os.path.commonprefix([str(first), str(last)])
        return common[: common.rfind(os.sep) + 1] or os.sep

    def collection_counts(self) -> dict[str, tuple[int, int]]:
        """Each named collection holding a document: name -> (documents, passages)."""
        c = self.tables.collection_counts
        with self.engine.connect() as conn:
            return {str(k): (int(n), int(p)) for k, n, p in conn.execute(select(c.c.name, c.c.documents,
                                                                               c.c.passages))}

    def _insert(self, conn: Connection, table: Table, rows: list[dict[str, object]]) -> None:
        """Insert rows (keyed by column key) into ``table``: an engine's bulk path where it has one."""
        conn.execute(table.insert(), rows)

    # -- reading -------------------------------------------------------------------------------------------

    def hydrate(self, ids: Sequence[int], conn: Connection | None = None) -> dict[int, PassageRecord]:
        """Passages with their document's path, title, metadata and source, by id (unknown ids are left out).

        ``conn``: a connection the caller already holds (a search holds one; taking a second from the pool per
        query can exhaust it when many threads search at once).
        """
        if not ids:
            return {}
        if conn is None:
            with self.engine.connect() as own:
                return self.hydrate(ids, own)
        rows = self._hydrate_rows(conn, ids)
        return {int(r[0]): PassageRecord(int(r[0]), *r[1:6], json.loads(r[6]), *r[7:]) for r in rows}

    def _hydrate_rows(self, conn: Connection, ids: Sequence[int]) -> Iterable[Sequence[Any]]:
        """The rows of :attr:`_hydrate_columns` for the passages ``ids`` (a hook: SQLite reads them without
        SQLAlchemy's layers)."""
        return conn.execute(self._hydrate_query, {"ids": list(ids)})

    def documents_of(self, ids: Sequence[int], conn: Connection) -> dict[int, int]:
        """Each passage's document (its id), by passage id (unknown ids are left out): what a ranking grouped by
        document needs of its passages, without reading their texts."""
        # A grouped hybrid query at 1M passages groups some 200: their documents' ids are read, not the passages
        # hydrated, a fraction of the time (docs/performance.md, "Grouped by document").
        if not ids:
            return {}
        return {int(r[0]): int(r[1]) for r in self._documents_of_rows(conn, ids)}

    def _documents_of_rows(self, conn: Connection, ids: Sequence[int]) -> Iterable[Sequence[Any]]:
        """``(passage id, document id)`` rows for the passages ``ids`` (a hook, as :meth:`_hydrate_rows`)."""
        return conn.execute(self._documents_of_query, {"ids": list(ids)})

    @cached_property
    def _documents_of_query(self) -> Select[Any]:
        p = self.tables.passages
        return select(p.c.id, p.c.document_id).where(self._among(p.c.id, "ids"))

    @cached_property
    def _hydrate_query(self) -> Select[Any]:
        # Built once: every query hydrates its hits, and building the statement costs more than running it.
        return self._hydrate_columns.where(self._among(self.tables.passages.c.id, "ids"))

    @cached_property
    def _hydrate_columns(self) -> Select[Any]:
        """What a hydrated passage is made of: its columns and its document's."""
        p, d = self.tables.passages, self.tables.documents
        return select(p.c.id, d.c.path, d.c.title, p.c.start, p.c.end, p.c.text, d.c.metadata, d.c.source,
                      p.c.section, p.c.start_line, p.c.start_column, p.c.source_lines, p.c.page,
                      ).join(d, d.c.id == p.c.document_id)

    def document_passages(self, path: str, start: int, end: int) -> DocumentPassages | None:
        p, d = self.tables.passages, self.tables.documents
        if names_no_document(path):
            return None
        with self.engine.connect() as conn:
            doc = conn.execute(
                select(d.c.id, d.c.path, d.c.title, d.c.source, d.c.metadata, d.c.n_chars).where(d.c.path == path)
            ).first()
            if doc is None:
                return None
            cols = select(p.c.id, p.c.start, p.c.end, p.c.text, p.c.start_line, p.c.start_column)
            # 64-bit bounds: "to the end" is asked as a huge offset, over the 32-bit columns' range.
            lo, hi = literal(start, BigInteger()), literal(end, BigInteger())
            rows = conn.execute(
                cols.where(p.c.document_id == doc.id, p.c.end > lo, p.c.start < hi).order_by(p.c.start, p.c.id)
            ).all()
            # Their neighbours outside the range: how the whitespace at its edges is laid out (store/rebuild.py).
            mine = p.c.document_id == doc.id
            before = conn.execute(
                cols.where(mine, p.c.end <= lo).order_by(p.c.end.desc(), p.c.id.desc()).limit(1)
            ).first() if start > 0 else None
            after = conn.execute(
                cols.where(mine, p.c.start >= hi).order_by(p.c.start, p.c.id).limit(1)
            ).first() if end < int(doc.n_chars) else None
        return DocumentPassages(doc.path, doc.title, doc.source, json.loads(doc.metadata), int(doc.n_chars),
                                passages=[_stored(r) for r in rows], previous=_stored(before) if before else None,
                                following=_stored(after) if after else None)

    def passage_documents(self) -> dict[int, str]:
        p, d = self.tables.passages, self.tables.documents
        query = select(p.c.id, d.c.path).join(d, d.c.id == p.c.document_id)
        with self.engine.connect() as conn:
            return {int(pid): str(path) for pid, path in conn.execute(query)}

    def export(self, vectors: bool = False) -> Iterator[ExportedDocument | ExportedPassage]:
        p, d = self.tables.passages, self.tables.documents
        docs = select(d.c.path, d.c.source, d.c.title, d.c.metadata, d.c.size, d.c.mtime, d.c.sha256,
                      d.c.indexed_at).order_by(d.c.path)
        cols = [p.c.id, d.c.path, p.c.start, p.c.end, p.c.text, p.c.section, *([p.c.vector] if vectors else [])]
        passages = select(*cols).join(d, d.c.id == p.c.document_id).order_by(p.c.id)
        with self.engine.connect() as own, self._snapshot(own) as conn:
            streamed = conn.execution_options(yield_per=STREAM_ROWS)
            for path, source, title, meta, size, mtime, sha, at in streamed.execute(docs):
                yield ExportedDocument(path, source, title, json.loads(meta), int(size), float(mtime), sha,
                                       None if at is None else float(at))
            for row in streamed.execute(passages):
                yield ExportedPassage(int(row[0]), row[1], int(row[2]), int(row[3]), row[4],
                                      row[6] if vectors else None, section=row[5])

    def id_summary(self) -> tuple[int, int]:
        """(passage count, largest passage id or 0): enough to tell whether a derived vector index is current."""
        p = self.tables.passages
        with self.engine.connect() as conn:
            n, top = conn.execute(select(func.count(), func.max(p.c.id))).one()
        return int(n), int(top or 0)

    def passage_texts(self, batch: int = 10000) -> Iterator[tuple[int, str, str]]:
        """Every passage as ``(id, text, section path)``, in id order (a derived lexical index rebuilt)."""
        p = self.tables.passages
        last = 0
        with self.engine.connect() as conn:
            while True:
                rows = conn.execute(
                    select(p.c.id, p.c.text, p.c.section).where(p.c.id > last).order_by(p.c.id).limit(batch)
                ).all()
                if not rows:
                    return
                yield from ((int(r[0]), r[1], r[2]) for r in rows)
                last = int(rows[-1][0])

    def stored_vectors(self, dimension: int, batch: int = 10000) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """All stored vectors as (ids int64 ``(n,)``, vectors float32 ``(n, d)``) batches, in id order."""
        p = self.tables.passages
        last = 0
        with self.engine.connect() as conn:
            while True:
                rows = conn.execute(
                    select(p.c.id, p.c.vector).where(p.c.id > last).order_by(p.c.id).limit(batch)
                ).all()
                if not rows:
                    return
                ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                yield ids, np.stack([r[1] for r in rows]).reshape(len(rows), dimension)
                last = int(ids[-1])

    def vectors_of(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """Stored vectors by passage id: float32 ``(d,)`` each (unknown ids are left out)."""
        p = self.tables.passages
        out: dict[int, np.ndarray] = {}
        with self.engine.connect() as conn:
            for i in range(0, len(ids), MAX_PARAMS):
                chunk = list(ids[i : i + MAX_PARAMS])
                out.update((int(k), v) for k, v in conn.execute(select(p.c.id, p.c.vector).where(p.c.id.in_(chunk))))
        return out


def _stored(row: Any) -> StoredPassage:
    """A row of ``(id, start, end, text, start_line, start_column)`` as a :class:`StoredPassage`."""
    i, s, e, t, line, column = row
    return StoredPassage(int(i), int(s), int(e), str(t), None if line is None else int(line),
                         None if column is None else int(column))


def _upsert(conn: Connection, table: Table) -> Any:
    """An INSERT into ``table`` in ``conn``'s dialect, which can take ``on_conflict_do_update`` (SQLite and
    PostgreSQL both have it); each dialect's module imported where it is used, so that a process reading a
    folder index does not import PostgreSQL's."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table)
