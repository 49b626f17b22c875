"""PostgreSQL: the BM25 index reads FTS5's terms. PostgreSQL's parser and English snowball stemmer tokenised the
lexical field otherwise than the folder backend's FTS5 (``porter unicode61 remove_diacritics 2``): hyphenated
words kept whole beside their parts, ``-19`` a signed number, ``2.5`` one number, host names one token, another
stemmer. ``passages_lexical.lexical_text`` now holds the FTS5 terms of each passage's section path (twice) and of
its text, space-joined, made by FTS5's own tokenizer; the BM25 index reads them under a text configuration that
neither stems nor drops a word (``searchapp_terms``, a copy of ``simple``), made with the index by the store on its
next writable open. The old configuration (``searchapp_english`` and its dictionary) goes. SQLite: unchanged.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from alembic import op
from sqlalchemy import text

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# Frozen history: searchapp/analysis.py as of this revision (TOKENIZER, SECTION_WEIGHT 2, fts5_terms and
# lexical_fields); a migration does not import the package, and tests/integration/test_postgres.py checks that the
# rows this writes are lexical_fields'.
_TOKENIZER = "porter unicode61 remove_diacritics 2"
_SECTION_WEIGHT = 2
_BATCH = 2000  # passages read, tokenised and written at a time
_TERMS_BATCH = 100
_JOINED = ("SELECT doc, group_concat(term, ' ') FROM (SELECT doc, term FROM texts_terms ORDER BY doc, offset) "
           "GROUP BY doc")
# 0008's field, for the downgrade.
_FIELD_0008 = "CASE WHEN section = '' THEN text ELSE repeat(section || E'\\n', 2) || text END"


def _terms(conn: sqlite3.Connection, texts: Sequence[str]) -> list[str]:
    out: list[str] = []
    for start in range(0, len(texts), _TERMS_BATCH):
        batch = texts[start : start + _TERMS_BATCH]
        conn.executemany("INSERT INTO texts(rowid, t) VALUES (?, ?)", enumerate(batch, start=1))
        joined = dict(conn.execute(_JOINED))
        conn.execute("INSERT INTO texts(texts) VALUES ('delete-all')")
        out.extend(joined.get(i, "") for i in range(1, len(batch) + 1))
    return out


def _fields(conn: sqlite3.Connection, texts: Sequence[str], sections: Sequence[str]) -> list[str]:
    distinct = list(dict.fromkeys(s for s in sections if s))
    section_terms = dict(zip(distinct, _terms(conn, distinct), strict=True))
    out = []
    for terms, section in zip(_terms(conn, texts), sections, strict=True):
        parts = [section_terms.get(section, "")] * _SECTION_WEIGHT + [terms]
        out.append(" ".join(p for p in parts if p))
    return out


def _own(name: str) -> str:
    """``name`` in the index's own schema (the first of the connection's search path), never one of public's."""
    schema = op.get_bind().execute(text("SELECT current_schema()")).scalar_one()
    return '"' + schema.replace('"', '""') + '".' + name


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    bind = op.get_bind()
    op.execute(f"DROP INDEX IF EXISTS {_own('passages_bm25')}")
    op.execute("TRUNCATE passages_lexical")
    tokenizer = sqlite3.connect(":memory:")
    tokenizer.execute(f"CREATE VIRTUAL TABLE texts USING fts5(t, content='', tokenize='{_TOKENIZER}')")
    tokenizer.execute("CREATE VIRTUAL TABLE texts_terms USING fts5vocab(texts, 'instance')")
    raw = bind.connection.driver_connection
    last = 0
    try:
        while True:
            rows = bind.execute(text("SELECT id, text, section FROM passages WHERE id > :last ORDER BY id "
                                     "LIMIT :n"), {"last": last, "n": _BATCH}).all()
            if not rows:
                break
            fields = _fields(tokenizer, [r[1] for r in rows], [r[2] for r in rows])
            with raw.cursor() as cur, cur.copy("COPY passages_lexical (id, lexical_text) FROM STDIN") as copy:
                for (pid, _, _), field in zip(rows, fields, strict=True):
                    copy.write_row((pid, field))
            last = rows[-1][0]
    finally:
        tokenizer.close()
    op.execute(f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {_own('searchapp_english')}")
    op.execute(f"DROP TEXT SEARCH DICTIONARY IF EXISTS {_own('searchapp_english_stem')}")


def downgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    # 0008's field and text configuration (English snowball, no stopword list, as its store made it); that store
    # makes the BM25 index again on its next writable open.
    op.execute(f"DROP INDEX IF EXISTS {_own('passages_bm25')}")
    op.execute(f"UPDATE passages_lexical l SET lexical_text = f.field FROM (SELECT id, {_FIELD_0008} AS field "
               "FROM passages) f WHERE f.id = l.id")
    op.execute(f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {_own('searchapp_terms')}")
    op.execute(f"CREATE TEXT SEARCH DICTIONARY {_own('searchapp_english_stem')} "
               "(TEMPLATE = snowball, Language = english)")
    op.execute(f"CREATE TEXT SEARCH CONFIGURATION {_own('searchapp_english')} (COPY = pg_catalog.english)")
    op.execute(f"ALTER TEXT SEARCH CONFIGURATION {_own('searchapp_english')} ALTER MAPPING REPLACE english_stem "
               f"WITH {_own('searchapp_english_stem')}")
