"""SQLite: the FTS5 index gets a second column, the passage's section path (its headings), weighted apart from the
text. PostgreSQL: unchanged (pg_textsearch indexes one plain column: docs/postgres.md).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# Frozen history: the tokenizer as 0001 created it (searchapp/analysis.py TOKENIZER; a test checks they agree).
_TOKENIZE = "porter unicode61 remove_diacritics 2"


def _recreate(columns: str) -> None:
    """The FTS5 table made again over ``columns`` of the passages, filled from them (``rebuild`` reads every
    passage from the content table: the index as if built anew)."""
    op.execute("DROP TABLE passages_fts")
    op.execute(
        "CREATE VIRTUAL TABLE passages_fts USING fts5("
        f"{columns}, content='passages', content_rowid='id', tokenize='{_TOKENIZE}')"
    )
    op.execute("INSERT INTO passages_fts(passages_fts) VALUES ('rebuild')")


def upgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        _recreate("text, section")


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        _recreate("text")
