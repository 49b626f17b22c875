"""passages.source_lines, passages.page: where a passage stands in its file where its text's lines are not the
file's (HTML: the file's line of each stretch of the passage's text) and, in a paged format (PDF), the page it
starts on.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-09
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Both dialects, plain ADD COLUMNs as in 0010. NULL for every stored passage: the stored texts cannot tell the
    # file's lines or pages; the next ingest reads HTML and PDF files again (their readers' version 1) and records
    # them, keeping the vectors where the passages are the same.
    op.add_column("passages", sa.Column("source_lines", sa.Text(), nullable=True))
    op.add_column("passages", sa.Column("page", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("passages", "page")
    op.drop_column("passages", "source_lines")
