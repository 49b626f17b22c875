"""The lexical index reads a passage's section path (its headings) too. SQLite: the FTS5 index gets it as a second
column, weighted apart from the text. PostgreSQL: pg_textsearch indexes one plain column (no expression, no second
column), so passages get a generated column, ``lexical``, the section path twice (its weight) then the text, and
the BM25 index moves to it (dropped here, made again by the store on its next writable open).

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


# What PostgreSQL's BM25 index reads: as FTS5's section column weighted 2 (store/lexical.py SECTION_WEIGHT), by
# repetition in the one field.
_PG_LEXICAL = ("CASE WHEN section = '' THEN text ELSE section || E'\\n' || section || E'\\n' || text END")


def upgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS passages_bm25")
        op.execute(f"ALTER TABLE passages ADD COLUMN lexical text GENERATED ALWAYS AS ({_PG_LEXICAL}) STORED")
        return
    if op.get_context().dialect.name != "sqlite":
        return
    op.execute("DROP TABLE passages_fts")
    op.execute(
        "CREATE VIRTUAL TABLE passages_fts USING fts5("
        f"text, section, content='passages', content_rowid='id', tokenize='{_TOKENIZE}')"
    )
    # Reads every passage's text and section from the content table: the index as if built anew.
    op.execute("INSERT INTO passages_fts(passages_fts) VALUES ('rebuild')")


def downgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS passages_bm25")
        op.execute("ALTER TABLE passages DROP COLUMN lexical")
        return
    if op.get_context().dialect.name != "sqlite":
        return
    op.execute("DROP TABLE passages_fts")
    op.execute(
        "CREATE VIRTUAL TABLE passages_fts USING fts5("
        f"text, content='passages', content_rowid='id', tokenize='{_TOKENIZE}')"
    )
    op.execute("INSERT INTO passages_fts(passages_fts) VALUES ('rebuild')")
