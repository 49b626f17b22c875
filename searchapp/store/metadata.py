"""Documents, passages and settings in SQLite, with the FTS5 index kept in the same transactions."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sqlalchemy import Connection, delete, func, insert, select, update

from searchapp.store import lexical, schema
from searchapp.store.models import DocumentRow, PassageRow, Setting
from searchapp.types import Document, Span

_DOCS = DocumentRow.__table__
_PASSAGES = PassageRow.__table__
_SETTINGS = Setting.__table__


@dataclass(frozen=True)
class StoredDocument:
    """What change detection needs to know of an indexed file."""

    id: int
    path: str
    mtime: float
    size: int
    sha256: str


@dataclass(frozen=True)
class PassageRecord:
    """A passage hydrated with its document's path and title."""

    id: int
    path: str
    title: str
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class NewDocument:
    """A document ready to store: its passages' spans and float32 ``(n, d)`` vectors, row i for span i."""

    document: Document
    spans: Sequence[Span]
    vectors: np.ndarray


class MetadataStore:
    """The index database. Opening it runs pending migrations."""

    def __init__(self, db_path: Path) -> None:
        self.path = db_path
        self.engine = schema.make_engine(db_path)
        schema.upgrade(self.engine)

    def close(self) -> None:
        """Release connections."""
        self.engine.dispose()

    def settings(self) -> dict[str, str]:
        """All settings rows (JSON text values)."""
        with self.engine.connect() as conn:
            return {k: v for k, v in conn.execute(select(_SETTINGS.c.key, _SETTINGS.c.value))}

    def put_settings(self, rows: dict[str, str]) -> None:
        """Insert or replace settings rows."""
        with self.engine.begin() as conn:
            for key, value in rows.items():
                conn.execute(delete(_SETTINGS).where(_SETTINGS.c.key == key))
                conn.execute(insert(_SETTINGS).values(key=key, value=value))

    def documents(self) -> dict[str, StoredDocument]:
        """Every indexed document by path."""
        cols = (_DOCS.c.id, _DOCS.c.path, _DOCS.c.mtime, _DOCS.c.size, _DOCS.c.sha256)
        with self.engine.connect() as conn:
            return {r.path: StoredDocument(*r) for r in conn.execute(select(*cols))}

    def counts(self) -> tuple[int, int]:
        """(documents, passages)."""
        with self.engine.connect() as conn:
            docs = conn.execute(select(func.count()).select_from(_DOCS)).scalar_one()
            passages = conn.execute(select(func.count()).select_from(_PASSAGES)).scalar_one()
        return int(docs), int(passages)

    def touch(self, doc_id: int, mtime: float) -> None:
        """Record a new modification time for a document whose content did not change."""
        with self.engine.begin() as conn:
            conn.execute(update(_DOCS).where(_DOCS.c.id == doc_id).values(mtime=mtime))

    def write(self, remove: Sequence[int], add: Sequence[NewDocument]) -> tuple[list[int], list[np.ndarray]]:
        """Remove documents by id and add new ones, in one transaction.

        Returns the removed passage ids and, per added document, its new passage ids (int64 ``(n,)``).
        """
        with self.engine.begin() as conn:
            removed = self._remove(conn, remove)
            added = [self._add(conn, item) for item in add]
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

    def _add(self, conn: Connection, item: NewDocument) -> np.ndarray:
        doc = item.document
        conn.execute(delete(_DOCS).where(_DOCS.c.path == doc.path))  # only reached for a path not held
        doc_id = conn.execute(
            insert(_DOCS).values(
                path=doc.path, title=doc.title, mtime=doc.mtime, size=doc.size, sha256=doc.sha256,
                n_chars=len(doc.text),
            )
        ).inserted_primary_key[0]
        vectors = np.ascontiguousarray(item.vectors, dtype=np.float32)
        ids: list[int] = []
        texts: list[str] = []
        for ordinal, span in enumerate(item.spans):
            passage = doc.text[span.start : span.end]
            pid = conn.execute(
                insert(_PASSAGES).values(
                    document_id=doc_id, ordinal=ordinal, start=span.start, end=span.end,
                    n_tokens=span.n_tokens, text=passage, vector=vectors[ordinal].tobytes(),
                )
            ).inserted_primary_key[0]
            ids.append(int(pid))
            texts.append(passage)
        lexical.index_passages(conn, ids, texts)
        return np.asarray(ids, dtype=np.int64)

    def hydrate(self, ids: Sequence[int]) -> dict[int, PassageRecord]:
        """Passages with their document's path and title, by id (unknown ids are left out)."""
        if not ids:
            return {}
        query = (
            select(_PASSAGES.c.id, _DOCS.c.path, _DOCS.c.title, _PASSAGES.c.start, _PASSAGES.c.end,
                   _PASSAGES.c.text)
            .join(_DOCS, _DOCS.c.id == _PASSAGES.c.document_id)
            .where(_PASSAGES.c.id.in_(list(ids)))
        )
        with self.engine.connect() as conn:
            return {r[0]: PassageRecord(*r) for r in conn.execute(query)}

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
