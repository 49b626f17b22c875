"""passages.start_line, passages.start_column: where a passage starts in its document's text, as line:column.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Both dialects, plain ADD COLUMNs as in 0005. The stored passages of an older index do not hold the whitespace
    # between them, so their lines cannot be counted here: NULL says unknown, until the next ingest reads the file
    # again (ingest/pipeline.PASSAGES_VERSION 4) and records them, keeping its vectors where its passages are the same.
    op.add_column("passages", sa.Column("start_line", sa.Integer(), nullable=True))
    op.add_column("passages", sa.Column("start_column", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("passages", "start_column")
    op.drop_column("passages", "start_line")
