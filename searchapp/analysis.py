"""How the lexical side reads text: a query's terms, the words of a text, and their stems.

One analysis for every engine and for highlighting: the FTS5 backend (``store/lexical.py``) and the PostgreSQL
backend (``store/postgres.py``) rank by the terms :func:`query_terms` gives, and the snippets
(``query/snippets.py``) cut words with :func:`word_spans` and compare :func:`stems`, so a word is highlighted
exactly when BM25 counted it. It sits above both ``store/`` and ``query/`` (``store/`` never imports ``query/``).

Stopwords are dropped because a very frequent word makes the index walk a posting list as long as the corpus
for almost no ranking signal.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Sequence

# Match FTS5's unicode61 tokenizer closely enough for query parsing: runs of letters and digits.
_TERM = re.compile(r"[^\W_]+", re.UNICODE)
# The FTS5 tokenizer of the passages table, as migrations/versions/0001_initial.py created it (a migration is
# frozen history and does not import this; tests/integration/test_snippets.py checks that the two agree).
TOKENIZER = "porter unicode61 remove_diacritics 2"
STOPWORDS = frozenset(
    "a an and are as at be by for from has have how i in is it its of on or that the this to was were "
    "what when where which who why will with do does did can you your".split()
)


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
