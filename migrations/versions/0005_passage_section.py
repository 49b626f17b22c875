"""passages.section: the headings a passage sits under, outermost first, joined by " > " ('' for none)

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Both dialects. Plain ADD COLUMN (0002: never batch mode's copy-and-move, which would cascade into passages
    # with foreign keys on). Passages of an older index were split without their headings: '' says none known,
    # until the document is ingested again.
    op.add_column("passages", sa.Column("section", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    op.drop_column("passages", "section")
