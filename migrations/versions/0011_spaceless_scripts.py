"""Both lexical indexes cut runs of Chinese, Japanese and Thai into two-letter units (searchapp/segment.py): the
passages holding such text are indexed again, every other passage is left as it is (its terms are unchanged).

SQLite: each such passage's FTS5 row is deleted with the values it was indexed with (the stored text and section)
and inserted as the tokenizer is now given it. PostgreSQL: its ``passages_lexical.lexical_text`` is made again;
the BM25 index is dropped where any row changed, and the store makes it again on its next writable open (as 0009).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Sequence

from alembic import op
from sqlalchemy import text

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

# Frozen history: searchapp/segment.py (for_tokenizer) and searchapp/analysis.py (TOKENIZER, SECTION_WEIGHT 2,
# fts5_terms, lexical_fields) as of this revision; a migration does not import the package.
# tests/integration/test_spaceless_scripts.py checks that the rows this writes are the package's.
_CJK = ("\u3005-\u3007\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
        "\uff66-\uff9f\U00020000-\U0002fa1f")
_THAI = "\u0e00-\u0e7f"
_WRITTEN = "\ue031-\ue04e"
_MARK_BASE = 0xE000 - 0x0E00
_RUN = re.compile(f"(?:[{_CJK}{_THAI}]|(?<=[{_THAI}{_WRITTEN}])[{_WRITTEN}])+")
_IS_CJK = re.compile(f"[{_CJK}]")
_TOKENIZER = "porter unicode61 remove_diacritics 2"
_SECTION_WEIGHT = 2
_BATCH = 2000  # passages read at a time
_JOINED = ("SELECT doc, group_concat(term, ' ') FROM (SELECT doc, term FROM texts_terms ORDER BY doc, offset) "
           "GROUP BY doc")


def _units(run: str) -> list[str]:
    out: list[str] = []
    letters: list[str] = []
    for ch in run:
        category = unicodedata.category(ch)
        if category in ("Mn", "Co") and letters and not _IS_CJK.match(letters[-1][0]):
            letters[-1] += ch if category == "Co" else chr(ord(ch) + _MARK_BASE)
        elif category[0] in "LN" and (not letters or
                                      (_IS_CJK.match(letters[-1][0]) is None) == (_IS_CJK.match(ch) is None)):
            letters.append(ch)
        else:
            out.extend(letters if len(letters) == 1 else [a + b for a, b in zip(letters, letters[1:], strict=False)])
            letters = [ch] if category[0] in "LN" else []
    out.extend(letters if len(letters) == 1 else [a + b for a, b in zip(letters, letters[1:], strict=False)])
    return out


def _cut(value: str) -> str:
    return _RUN.sub(lambda m: " " + " ".join(_units(m.group())) + " ", value)


def _terms(conn: sqlite3.Connection, texts: Sequence[str]) -> list[str]:
    conn.executemany("INSERT INTO texts(rowid, t) VALUES (?, ?)", enumerate(texts, start=1))
    joined = dict(conn.execute(_JOINED))
    conn.execute("INSERT INTO texts(texts) VALUES ('delete-all')")
    return [joined.get(i, "") for i in range(1, len(texts) + 1)]


def _field(conn: sqlite3.Connection, body: str, section: str, cut: bool) -> str:
    """A passage's BM25 field (analysis.lexical_fields), its runs cut (``cut``) or whole (0009's)."""
    terms, section_terms = _terms(conn, [_cut(body), _cut(section)] if cut else [body, section])
    parts = [section_terms] * _SECTION_WEIGHT + [terms] if section else [terms]
    return " ".join(p for p in parts if p)


def _own(name: str) -> str:
    """``name`` in the index's own schema (the first of the connection's search path), never one of public's."""
    schema = op.get_bind().execute(text("SELECT current_schema()")).scalar_one()
    return '"' + schema.replace('"', '""') + '".' + name


def _spaceless() -> list[tuple[int, str, str]]:
    """The passages (id, text, section) holding a run of these scripts, read in batches."""
    bind = op.get_bind()
    found: list[tuple[int, str, str]] = []
    last = 0
    while True:
        rows = bind.execute(text("SELECT id, text, section FROM passages WHERE id > :last ORDER BY id LIMIT :n"),
                            {"last": last, "n": _BATCH}).all()
        if not rows:
            return found
        found.extend((r[0], r[1], r[2]) for r in rows if _RUN.search(r[1]) or _RUN.search(r[2]))
        last = rows[-1][0]


def _sqlite(rows: list[tuple[int, str, str]], cut: bool) -> None:
    """Each passage's FTS5 row made again: deleted as it was indexed, inserted as it is now (``cut``) or was."""
    bind = op.get_bind()
    for pid, body, section in rows:
        old, new = (body, section), (_cut(body), _cut(section))
        if not cut:
            old, new = new, old
        bind.execute(text("INSERT INTO passages_fts(passages_fts, rowid, text, section) "
                          "VALUES ('delete', :id, :text, :section)"), {"id": pid, "text": old[0], "section": old[1]})
        bind.execute(text("INSERT INTO passages_fts(rowid, text, section) VALUES (:id, :text, :section)"),
                     {"id": pid, "text": new[0], "section": new[1]})


def _postgresql(rows: list[tuple[int, str, str]], cut: bool) -> None:
    """Each passage's BM25 field made again, its runs cut (``cut``) or whole. The table is emptied and filled
    again, every other row as it was, rather than updated in place: pg_textsearch 1.0.0 built over a table holding
    the dead versions of updated rows found none of their new terms."""
    if not rows:
        return
    op.execute(f"DROP INDEX IF EXISTS {_own('passages_bm25')}")
    tokenizer = sqlite3.connect(":memory:")
    tokenizer.execute(f"CREATE VIRTUAL TABLE texts USING fts5(t, content='', tokenize='{_TOKENIZER}')")
    tokenizer.execute("CREATE VIRTUAL TABLE texts_terms USING fts5vocab(texts, 'instance')")
    try:
        fields = [{"id": pid, "f": _field(tokenizer, body, section, cut)} for pid, body, section in rows]
    finally:
        tokenizer.close()
    bind = op.get_bind()
    bind.execute(text("CREATE TEMP TABLE lexical_0011 ON COMMIT DROP AS SELECT id, lexical_text FROM passages_lexical"))
    bind.execute(text("UPDATE lexical_0011 SET lexical_text = :f WHERE id = :id"), fields)
    op.execute("TRUNCATE passages_lexical")
    op.execute("INSERT INTO passages_lexical (id, lexical_text) SELECT id, lexical_text FROM lexical_0011")
    op.execute("DROP TABLE lexical_0011")


def _migrate(cut: bool) -> None:
    rows = _spaceless()
    if op.get_context().dialect.name == "sqlite":
        _sqlite(rows, cut)
    else:
        _postgresql(rows, cut)


def upgrade() -> None:
    _migrate(cut=True)


def downgrade() -> None:
    _migrate(cut=False)
