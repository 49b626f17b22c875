"""PostgreSQL: the BM25 index reads a passage's section path too. pg_textsearch (1.0.0) indexes one plain column
(it refuses an expression and a second column), so a table of its own, ``passages_lexical``, holds what it reads of
each passage: the section path twice (FTS5's section weight, by repetition) and then the text, the text alone for a
passage without a section. Its own table, not a column of ``passages``: a wider passages row made the exact vector
scan slower. The BM25 index moves to it: dropped here, made again by the store on its next writable open. SQLite:
unchanged (FTS5 weighs its section column, 0006).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# Frozen history: searchapp/analysis.py lexical_field as of this revision, SECTION_WEIGHT 2 (a migration does not
# import the package; tests/integration/test_postgres.py checks that the rows it writes are that function's).
_FIELD = "CASE WHEN section = '' THEN text ELSE repeat(section || E'\\n', 2) || text END"


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute("CREATE TABLE passages_lexical (id bigint PRIMARY KEY REFERENCES passages (id) ON DELETE CASCADE, "
               "lexical_text text NOT NULL)")
    op.execute(f"INSERT INTO passages_lexical (id, lexical_text) SELECT id, {_FIELD} FROM passages")
    op.execute("DROP INDEX IF EXISTS passages_bm25")


def downgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    # Its BM25 index goes with it; the store of revision 0007 makes one over passages.text on open.
    op.execute("DROP TABLE passages_lexical")
