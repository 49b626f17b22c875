"""Persistent, incremental BM25 over SQLite FTS5, living in the same database as the passages.

FTS5's ``bm25()`` uses k1 = 1.2, b = 0.75 and idf = ln((N - n + 0.5) / (n + 0.5)), floored at 1e-6 for terms in
more than half of the rows (rank_bm25's BM25Okapi floors at 0.25 x the mean idf instead); docs/architecture.md
states the difference. Scores here are made positive (FTS5 returns them negated so smaller sorts first).

Queries are turned into an OR of quoted terms, with a short stopword list dropped: a very frequent word makes
FTS5 walk a posting list as long as the corpus for almost no ranking signal.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import Connection, text

from searchapp.store.filter_sql import Restrict
from searchapp.types import Run

# Match FTS5's unicode61 tokenizer closely enough for query parsing: runs of letters and digits.
_TERM = re.compile(r"[^\W_]+", re.UNICODE)
# The FTS5 tokenizer of the passages table, as migrations/versions/0001_initial.py created it (a migration is
# frozen history and does not import this; tests/integration/test_snippets.py checks that the two agree).
TOKENIZER = "porter unicode61 remove_diacritics 2"
STOPWORDS = frozenset(
    "a an and are as at be by for from has have how i in is it its of on or that the this to was were "
    "what when where which who why will with do does did can you your".split()
)
# SQLite limits host parameters per statement; stay well under the old default of 999.
MAX_PARAMS = 900


def query_terms(query: str) -> list[str]:
    """Lower-cased query terms, stopwords dropped unless nothing else is left, duplicates removed."""
    terms = list(dict.fromkeys(t.lower() for t in _TERM.findall(query)))
    content = [t for t in terms if t not in STOPWORDS]
    return content or terms


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of ``text``'s words as the lexical side cuts them (runs of letters and digits)."""
    return [m.span() for m in _TERM.finditer(text)]


_analysers = threading.local()


def stems(words: Sequence[str]) -> list[frozenset[str]]:
    """The index terms FTS5 makes of each word with :data:`TOKENIZER` (lower-cased, accents folded, Porter
    stemmed): ``"Running"`` -> ``{"run"}``. Usually one term a word; none for a word it drops.

    Runs the real tokenizer in an in-memory FTS5 table (one per thread) rather than a stemmer of our own, so
    highlighting can never disagree with what BM25 matched.
    """
    if not words:
        return []
    conn = getattr(_analysers, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:")
        conn.execute(f"CREATE VIRTUAL TABLE words USING fts5(w, tokenize='{TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE words_terms USING fts5vocab(words, 'instance')")
        _analysers.conn = conn
    try:
        conn.executemany("INSERT INTO words(rowid, w) VALUES (?, ?)", enumerate(words, start=1))
        found: dict[int, set[str]] = {}
        for term, row in conn.execute("SELECT term, doc FROM words_terms"):
            found.setdefault(int(row), set()).add(str(term))
    finally:
        conn.execute("DELETE FROM words")
    return [frozenset(found.get(i, ())) for i in range(1, len(words) + 1)]


def match_expression(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: the OR of the terms, each quoted so none is read as an operator."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def index_passages(conn: Connection, ids: Sequence[int], texts: Sequence[str]) -> None:
    """Add passages to the inverted index (call in the transaction that inserts them)."""
    conn.execute(
        text("INSERT INTO passages_fts(rowid, text) VALUES (:id, :text)"),
        [{"id": i, "text": t} for i, t in zip(ids, texts, strict=True)],
    )


def unindex_passages(conn: Connection, ids: Sequence[int], texts: Sequence[str]) -> None:
    """Remove passages from the inverted index; FTS5 needs the text that was indexed to undo it."""
    conn.execute(
        text("INSERT INTO passages_fts(passages_fts, rowid, text) VALUES ('delete', :id, :text)"),
        [{"id": i, "text": t} for i, t in zip(ids, texts, strict=True)],
    )


def _restricted(restrict: Restrict | None) -> tuple[str, dict[str, Any]]:
    """`` AND rowid IN (...)`` for a SELECT of allowed passage ids with its parameters (``filter_sql.passages_sql``)."""
    if restrict is None:
        return "", {}
    return f" AND rowid IN ({restrict[0]})", restrict[1]


def search(conn: Connection, query: str, k: int, restrict: Restrict | None = None) -> Run:
    """The ``k`` best passages for ``query`` by BM25: ``[(passage_id, score)]``, best first, scores > 0.

    ``restrict``: only passages among the ids this SQL SELECT returns (with its parameters).
    """
    terms = query_terms(query)
    if not terms or k <= 0:
        return []
    where, params = _restricted(restrict)
    rows = conn.execute(
        text(
            "SELECT rowid, -bm25(passages_fts) AS s FROM passages_fts WHERE passages_fts MATCH :q"
            f"{where} ORDER BY bm25(passages_fts), rowid LIMIT :k"
        ),
        {"q": match_expression(terms), "k": k, **params},
    )
    return [(int(r[0]), float(r[1])) for r in rows]


def scores(conn: Connection, query: str, ids: Sequence[int]) -> dict[int, float]:
    """BM25 scores of the given passages for ``query``; a passage that matches no term scores 0."""
    out = dict.fromkeys(ids, 0.0)
    terms = query_terms(query)
    if not terms or not ids:
        return out
    expr = match_expression(terms)
    for placeholders, params in _id_lists(ids):
        rows = conn.execute(
            text(
                "SELECT rowid, -bm25(passages_fts) FROM passages_fts "
                f"WHERE passages_fts MATCH :q AND rowid IN ({placeholders})"
            ),
            {"q": expr, **params},
        )
        out.update((int(r[0]), float(r[1])) for r in rows)
    return out


def _id_lists(ids: Sequence[int]) -> Iterator[tuple[str, dict[str, int]]]:
    """``ids`` as bound ``IN (...)`` lists, each within SQLite's limit on host parameters: (placeholders,
    parameters) per chunk."""
    for i in range(0, len(ids), MAX_PARAMS):
        chunk = list(ids[i : i + MAX_PARAMS])
        yield ",".join(f":p{j}" for j in range(len(chunk))), {f"p{j}": v for j, v in enumerate(chunk)}


class Matches:
    """One query's matches materialised once in a temporary table: the top ``k`` now, the scores of any other
    passages (say, the dense side's candidates, known only later) by a keyed lookup, with no second pass over
    the posting lists. Lets a hybrid query run its dense search while FTS5 scores the matches.

    Use as a context manager on one connection; the table is emptied on exit.
    """

    def __init__(self, conn: Connection, query: str, k: int, restrict: Restrict | None = None) -> None:
        self.conn = conn
        self.top: Run = []
        self.terms = query_terms(query)
        if not self.terms or k <= 0:
            return
        conn.execute(text("CREATE TEMP TABLE IF NOT EXISTS lexical_matches (id INTEGER PRIMARY KEY, s REAL)"))
        where, params = _restricted(restrict)
        # FTS5 yields rowids in ascending order, so the inserts append to the temporary b-tree.
        conn.execute(
            text(
                "INSERT INTO temp.lexical_matches SELECT rowid, -bm25(passages_fts) FROM passages_fts "
                f"WHERE passages_fts MATCH :q{where}"
            ),
            {"q": match_expression(self.terms), **params},
        )
        rows = conn.execute(text("SELECT id, s FROM temp.lexical_matches ORDER BY s DESC, id LIMIT :k"), {"k": k})
        self.top = [(int(r[0]), float(r[1])) for r in rows]

    def scores(self, ids: Sequence[int]) -> dict[int, float]:
        """BM25 of the given passages (0 for those that match no term)."""
        out = dict.fromkeys(ids, 0.0)
        if not self.terms:
            return out
        for placeholders, params in _id_lists(ids):
            rows = self.conn.execute(
                text(f"SELECT id, s FROM temp.lexical_matches WHERE id IN ({placeholders})"), params
            )
            out.update((int(r[0]), float(r[1])) for r in rows)
        return out

    def __enter__(self) -> Matches:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.terms:
            self.conn.execute(text("DELETE FROM temp.lexical_matches"))
