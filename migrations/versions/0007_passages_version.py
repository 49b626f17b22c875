"""documents.passages_version: which version of the readers made a document's passages; NULL for older rows.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Both dialects, a plain ADD COLUMN as in 0004. NULL says the passages were made by a reader from before this
    # record existed: the next ingest reads such a file again (and keeps its vectors where the passages come out
    # the same).
    op.add_column("documents", sa.Column("passages_version", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("documents", "passages_version")
