"""How the lexical side reads text: a query's terms, the words of a text, and their stems.

One analysis for every engine and for highlighting: the FTS5 backend (``store/lexical.py``) and the PostgreSQL
backend (``store/postgres.py``) rank by the terms :func:`query_terms` gives, and the snippets
(``query/snippets.py``) cut words with :func:`word_list` (and find them with
:func:`words_among`) and compare :func:`stems`, so a word is highlighted
exactly when BM25 counted it. It sits above both ``store/`` and ``query/`` (``store/`` never imports ``query/``).

Stopwords are dropped because a very frequent word makes the index walk a posting list as long as the corpus
for almost no ranking signal.

A passage's section path (the headings it sits under) counts :data:`SECTION_WEIGHT` times a word of its text, in
both engines: FTS5 weighs its section column so in ``bm25()``; pg_textsearch indexes one plain column, so the
PostgreSQL backend indexes :func:`lexical_field`, the section path that many times and then the text.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence

# Match FTS5's unicode61 tokenizer closely enough for query parsing: runs of letters and digits.
_TERM = re.compile(r"[^\W_]+", re.UNICODE)
# The FTS5 tokenizer of the passages table, as migrations/versions/0001_initial.py created it (a migration is
# frozen history and does not import this; tests/integration/test_snippets.py checks that the two agree).
TOKENIZER = "porter unicode61 remove_diacritics 2"
STOPWORDS = frozenset(
    "a an and are as at be by for from has have how i in is it its of on or that the this to was were "
    "what when where which who why will with do does did can you your".split()
)


# How much a match in a passage's section path counts against one in its text (docs/evaluation.md: "Your own
# folder"). A whole number: PostgreSQL's BM25 field repeats the section path this many times.
SECTION_WEIGHT = 2


def lexical_field(text: str, section: str) -> str:
    """What PostgreSQL's BM25 index reads of a passage: its section path :data:`SECTION_WEIGHT` times, a line each,
    then its text; the text alone where it has no section. The term frequencies are then FTS5's weighted ones
    (text + weight x section); only the length normalisation counts the section's words weight times, not once."""
    return (section + "\n") * SECTION_WEIGHT + text if section else text


def query_terms(query: str) -> list[str]:
    """Lower-cased query terms, stopwords dropped unless nothing else is left, duplicates removed."""
    terms = list(dict.fromkeys(t.lower() for t in _TERM.findall(query)))
    content = [t for t in terms if t not in STOPWORDS]
    return content or terms


def word_list(text: str) -> list[str]:
    """``text``'s words as the lexical side cuts them (runs of letters and digits), in order."""
    return _TERM.findall(text)


def words_among(words: Iterable[str]) -> re.Pattern[str]:
    """A pattern finding exactly the words of a text (as :func:`word_list` cuts them) that are among ``words``:
    one of them with no letter or digit on either side."""
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<![^\W_])(?:{alternatives})(?![^\W_])")


_analysers = threading.local()
# Each distinct word's stems, kept once analysed: a query's hits share most of their words with earlier queries'
# (a corpus's vocabulary is Zipfian), and a dictionary lookup costs about a hundredth of a pass through the
# tokenizer. Emptied when full rather than evicting, so the bound holds without bookkeeping per word.
STEM_CACHE_SIZE = 200_000
_stem_cache: dict[str, frozenset[str]] = {}


def stems(words: Sequence[str]) -> list[frozenset[str]]:
    """The index terms FTS5 makes of each word with :data:`TOKENIZER` (lower-cased, accents folded, Porter
    stemmed): ``"Running"`` -> ``{"run"}``. Usually one term a word; none for a word it drops.

    Runs the real tokenizer in an in-memory FTS5 table (one per thread) rather than a stemmer of our own, so
    highlighting can never disagree with what BM25 matched; each distinct word once per process.
    """
    known = {w: _stem_cache.get(w) for w in words}
    missing = [w for w, found in known.items() if found is None]
    if missing:
        analysed = _analyse(missing)
        known.update(zip(missing, analysed, strict=True))
        if len(_stem_cache) + len(missing) > STEM_CACHE_SIZE:
            _stem_cache.clear()
        _stem_cache.update(zip(missing, analysed, strict=True))
    return [known[w] for w in words]  # type: ignore[misc] - every word is known by now


def _analyse(words: Sequence[str]) -> list[frozenset[str]]:
    """:func:`stems` of distinct ``words`` by the tokenizer itself."""
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
