"""initial schema: settings, documents, passages, FTS5 lexical index

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "settings",
        sa.Column("key", sa.String(), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
    )
    op.create_table(
        "documents",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("path", sa.String(), nullable=False, unique=True),
        sa.Column("title", sa.String(), nullable=False),
        sa.Column("mtime", sa.Float(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("n_chars", sa.Integer(), nullable=False),
    )
    op.create_table(
        "passages",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "document_id", sa.Integer(), sa.ForeignKey("documents.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("start", sa.Integer(), nullable=False),
        sa.Column("end", sa.Integer(), nullable=False),
        sa.Column("n_tokens", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_passages_document_id", "passages", ["document_id"])
    if op.get_context().dialect.name != "sqlite":
        return  # PostgreSQL's lexical index is pg_textsearch's, made by the store (it needs the extension)
    # External-content FTS5: the text lives once, in passages; the FTS table holds only the inverted index.
    # Porter stemming over unicode61 with diacritics folded. Rows are kept in step by the lexical store
    # in the same transaction as the passages.
    op.execute(
        "CREATE VIRTUAL TABLE passages_fts USING fts5("
        "text, content='passages', content_rowid='id', "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        op.execute("DROP TABLE passages_fts")
    op.drop_index("ix_passages_document_id", "passages")
    op.drop_table("passages")
    op.drop_table("documents")
    op.drop_table("settings")
