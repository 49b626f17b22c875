"""PostgreSQL: passages.embedding (pgvector) in place of the vector bytes; 64-bit ids and sizes. SQLite: unchanged.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    # The dimension is known only once the encoder is loaded: the store types the column (vector(d)) then.
    op.drop_column("passages", "vector")
    op.execute("ALTER TABLE passages ADD COLUMN embedding vector")
    op.alter_column("documents", "size", type_=sa.BigInteger())
    # Ids are never reused (the key FAISS, FTS5 and pgvector rows share): 64 bits, as SQLite's are.
    for table, column in (("documents", "id"), ("passages", "id"), ("passages", "document_id")):
        op.alter_column(table, column, type_=sa.BigInteger())
    for sequence in ("documents_id_seq", "passages_id_seq"):
        op.execute(f"ALTER SEQUENCE {sequence} AS bigint")


def downgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.alter_column("documents", "size", type_=sa.Integer())
    op.drop_column("passages", "embedding")
    op.add_column("passages", sa.Column("vector", sa.LargeBinary(), nullable=False, server_default=b""))
