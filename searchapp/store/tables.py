"""SQLAlchemy ORM tables. The schema itself is created and changed only by the Alembic migrations."""

from __future__ import annotations

from sqlalchemy import Float, ForeignKey, Integer, LargeBinary, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    """Declarative base of the index database."""


class Setting(Base):
    """One index setting (model, pooling, splitter, fusion), the value JSON-encoded."""

    __tablename__ = "settings"

    key: Mapped[str] = mapped_column(String, primary_key=True)
    value: Mapped[str] = mapped_column(Text, nullable=False)


class DocumentRow(Base):
    """A source file as last ingested."""

    __tablename__ = "documents"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    path: Mapped[str] = mapped_column(String, unique=True, nullable=False)
    title: Mapped[str] = mapped_column(String, nullable=False)
    mtime: Mapped[float] = mapped_column(Float, nullable=False)
    size: Mapped[int] = mapped_column(Integer, nullable=False)
    sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    n_chars: Mapped[int] = mapped_column(Integer, nullable=False)
    # A JSON object given with the document (filters match its keys); "file" for ingested files, "text" for
    # texts added through the API, so a folder's re-ingest never removes the latter.
    meta_json: Mapped[str] = mapped_column("metadata", Text, nullable=False, server_default="{}")
    source: Mapped[str] = mapped_column(String, nullable=False, server_default="file")
    # When this row was written, i.e. the document (re)indexed: Unix seconds (UTC). NULL for rows from before
    # migration 0004 (unknown). Kept by a metadata-only update and by an mtime-only touch.
    indexed_at: Mapped[float | None] = mapped_column(Float, nullable=True)

    passages: Mapped[list[PassageRow]] = relationship(
        back_populates="document", cascade="all, delete-orphan", passive_deletes=True
    )


class PassageRow(Base):
    """A passage: ``text`` is the document text's ``[start:end]``; ``vector`` its float32 embedding bytes.

    The id is the key shared with FAISS and the FTS5 table; AUTOINCREMENT so a deleted id is never reused
    and a stale vector can never point at a new passage.
    """

    __tablename__ = "passages"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True, nullable=False
    )
    ordinal: Mapped[int] = mapped_column(Integer, nullable=False)
    start: Mapped[int] = mapped_column(Integer, nullable=False)
    end: Mapped[int] = mapped_column(Integer, nullable=False)
    n_tokens: Mapped[int] = mapped_column(Integer, nullable=False)
    text: Mapped[str] = mapped_column(Text, nullable=False)
    vector: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)

    document: Mapped[DocumentRow] = relationship(back_populates="passages")
