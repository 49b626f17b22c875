"""documents.indexed_at: when the document's row was written (Unix seconds, UTC); NULL for older rows (unknown).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-08
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Both dialects. Plain ADD COLUMN, never batch mode's copy-and-move (0002: with foreign keys on, dropping the
    # old documents table would cascade into passages). No default: the rows of an older index were indexed at a
    # time nobody recorded, and NULL says so. Float: double precision on PostgreSQL, REAL on SQLite.
    op.add_column("documents", sa.Column("indexed_at", sa.Float(), nullable=True))


def downgrade() -> None:
    op.drop_column("documents", "indexed_at")
