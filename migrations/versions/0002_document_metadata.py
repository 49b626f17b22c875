"""documents: metadata (a JSON object) and source ("file" or "text")

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN, never batch mode's copy-and-move: with foreign keys on, dropping the old documents table
    # would cascade into passages. Server defaults fill the rows of an older index: files, no metadata.
    op.add_column("documents", sa.Column("metadata", sa.Text(), nullable=False, server_default="{}"))
    op.add_column("documents", sa.Column("source", sa.String(), nullable=False, server_default="file"))


def downgrade() -> None:
    op.drop_column("documents", "source")
    op.drop_column("documents", "metadata")
