"""The index's tables as SQLAlchemy Core describes them, true for both dialects. The schema itself is created and
changed only by the Alembic migrations (``migrations/versions``); these say what the record operations
(``store/records.py``) read and write.

The dialects differ in one column: a passage's vector is float32 bytes in SQLite (``passages.vector``, the type
:class:`Embedding`) and a pgvector value in PostgreSQL (``passages.embedding``, migration 0003, the type its
backend gives: ``store/postgres/vector.py``). Both go by the key ``vector`` and read and write NumPy float32
``(d,)`` arrays. PostgreSQL has one more table, ``passages_lexical`` (migration 0008): what its BM25 index reads of
each passage, the FTS5 terms of its section path and text (``analysis.lexical_fields``, migration 0009), a row per
passage kept by the store's writes; SQLite's FTS5 table reads the passages' own columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from sqlalchemy import BigInteger, Column, Float, ForeignKey, Integer, LargeBinary, MetaData, String, Table, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

# 64-bit ids and sizes in PostgreSQL (migration 0003); SQLite's INTEGER is 64-bit already, and its rowid alias must
# be spelled INTEGER.
_ID = BigInteger().with_variant(Integer(), "sqlite")


class Embedding(TypeDecorator[np.ndarray]):
    """A passage's vector in SQLite, float32 ``(d,)``: its raw bytes."""

    impl = LargeBinary
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        return np.ascontiguousarray(value, dtype=np.float32).reshape(-1).tobytes()

    def process_result_value(self, value: Any, dialect: Dialect) -> np.ndarray | None:
        if value is None:
            return None
        return np.frombuffer(value, dtype=np.float32)


@dataclass(frozen=True)
class Tables:
    """The tables of an index: ``settings`` (key -> JSON text), ``documents`` (a source file as last ingested, or a
    text added through the API), ``passages`` (a document's ``text[start:end]`` with its vector) and
    ``collection_counts`` (each named collection's documents and passages, kept with the documents' writes)."""

    settings: Table
    documents: Table
    passages: Table
    collection_counts: Table
    # PostgreSQL only: a passage's BM25 field (its section path and its text), apart from the passages' rows, which
    # the exact vector scan reads (a wider row made that scan slower; docs/postgres.md).
    lexical: Table | None = None


@cache
def tables(dialect: str, vector: type[TypeEngine[np.ndarray]] = Embedding) -> Tables:
    """The tables as the ``dialect`` (``sqlite`` or ``postgresql``) holds them, the passages' vectors as the type
    ``vector`` (a backend whose vectors are not float32 bytes gives its own: PostgreSQL's ``PgVector``)."""
    meta = MetaData()
    settings = Table(
        "settings", meta,
        Column("key", String, primary_key=True),
        Column("value", Text, nullable=False),
    )
    documents = Table(
        "documents", meta,
        Column("id", _ID, primary_key=True),
        Column("path", String, unique=True, nullable=False),
        Column("title", String, nullable=False),
        Column("mtime", Float, nullable=False),
        Column("size", _ID, nullable=False),
        Column("sha256", String(64), nullable=False),
        Column("n_chars", Integer, nullable=False),
        # A JSON object given with the document (filters match its keys); "file" for ingested files, "text" for
        # texts added through the API, so a folder's re-ingest never removes the latter.
        Column("metadata", Text, nullable=False, server_default="{}"),
        Column("source", String, nullable=False, server_default="file"),
        # When this row was written, i.e. the document (re)indexed: Unix seconds (UTC). NULL for rows from before
        # migration 0004 (unknown). Kept by a metadata-only update and by an mtime-only touch.
        Column("indexed_at", Float, nullable=True),
        # Which version of the readers (loaders, markup blanking, sections, splitter) made its passages; a
        # re-ingest reads a file again when this differs from the running version. NULL: before migration 0007.
        Column("passages_version", Integer, nullable=True),
        # How many passages it holds, written with them (they are only ever written and removed with it): the
        # document and collection listings read this row, not every passage. Filled for older rows by 0012.
        Column("n_passages", Integer, nullable=True),
    )
    # The id is the key shared with the vector index and the lexical index; never reused (AUTOINCREMENT in
    # SQLite, a sequence in PostgreSQL), so a stale vector can never point at a new passage.
    passages = Table(
        "passages", meta,
        Column("id", _ID, primary_key=True),
        Column("document_id", _ID, ForeignKey("documents.id", ondelete="CASCADE"), index=True, nullable=False),
        Column("ordinal", Integer, nullable=False),
        Column("start", Integer, nullable=False),
        Column("end", Integer, nullable=False),
        Column("n_tokens", Integer, nullable=False),
        Column("text", Text, nullable=False),
        # The headings the passage sits under, outermost first, joined by " > " ('' for none; migration 0005).
        Column("section", Text, nullable=False, server_default=""),
        # Where the passage starts in its document's text as line and column (lines.py; migration 0010): the
        # whitespace between passages is not stored, so lines are counted when the document is written. NULL: an
        # older index's passage, until its file is read again.
        Column("start_line", Integer, nullable=True),
        Column("start_column", Integer, nullable=True),
        # Where the passage stands in its file where its text's lines are not the file's (HTML): from which of its
        # characters on it is on which line of the file, "0:28,17:29" (lines.places); and a paged format's (PDF)
        # page it starts on, from 1. NULL: a format whose text keeps the file's lines, a format without pages, or
        # an older index's passage until its file is read again (migration 0013).
        Column("source_lines", Text, nullable=True),
        Column("page", Integer, nullable=True),
        Column("embedding" if dialect == "postgresql" else "vector", vector(), key="vector", nullable=False),
        sqlite_autoincrement=True,
    )
    # Kept in the transaction that writes or removes the documents (records.Records), so that listing the
    # collections reads a row per collection, not every document (GET /collections read every passage per call).
    collection_counts = Table(
        "collection_counts", meta,
        Column("name", String, primary_key=True),
        Column("documents", _ID, nullable=False),
        Column("passages", _ID, nullable=False),
    )
    if dialect != "postgresql":
        return Tables(settings, documents, passages, collection_counts)
    lexical = Table(
        "passages_lexical", meta,
        Column("id", _ID, ForeignKey("passages.id", ondelete="CASCADE"), primary_key=True),
        Column("lexical_text", Text, nullable=False),
    )
    return Tables(settings, documents, passages, collection_counts, lexical)
