"""How the lexical side reads text: a query's terms, the words of a text, and their stems, behind one interface
(:class:`Analyzer`; :data:`ANALYSIS`, FTS5's analysis, the one in use), which the engines and the snippets call.

One analysis for every engine and for highlighting: the FTS5 backend (``store/lexical.py``) and the PostgreSQL
backend (``store/postgres/``) rank by the terms :func:`query_terms` gives, and the snippets
(``query/snippets.py``) find words as :func:`word_list` cuts them (:func:`word_places`) and compare
:func:`stems`, so a word is highlighted exactly when BM25 counted it. It sits above both ``store/`` and ``query/``
(``store/`` never imports ``query/``).

Stopwords are dropped because a very frequent word makes the index walk a posting list as long as the corpus
for almost no ranking signal.

FTS5's tokenizer (:data:`TOKENIZER`) is the one analysis of both engines. Whatever reaches it here (a text, a
word, a query) is first given as ``segment.for_tokenizer`` writes it: runs of Chinese, Japanese and Thai cut into
two-letter units, any other text as it is. The folder backend's FTS5 table runs it
itself; PostgreSQL's parser and stemmers cut and stem otherwise (hyphenated words kept whole beside their parts,
``-19`` a signed number, ``2.5`` one number, host names one token; snowball's English stemmer), so PostgreSQL's
BM25 index reads FTS5's terms instead, made here by the same tokenizer in an in-memory FTS5 table
(:func:`fts5_terms`), under a text configuration that neither stems nor drops a word; its queries are the FTS5
terms of the query's words (:func:`fts5_query_terms`). Both engines then count the same terms of every passage and
query (docs/postgres.md, "Why lexical differs").

A passage's section path (the headings it sits under) counts :data:`SECTION_WEIGHT` times a word of its text, in
both engines: FTS5 weighs its section column so in ``bm25()``; pg_textsearch indexes one plain column, so the
PostgreSQL backend indexes :func:`lexical_fields`, the section path's terms that many times and then the text's.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from searchapp import segment
from searchapp.sqlite_driver import dbapi

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


def lexical_fields(texts: Sequence[str], sections: Sequence[str]) -> list[str]:
    """What PostgreSQL's BM25 index reads of each passage: the FTS5 terms (:func:`fts5_terms`) of its section path
    :data:`SECTION_WEIGHT` times, then those of its text; the text's alone where it has no section. The term
    frequencies are then FTS5's weighted ones (text + weight x section); only the length normalisation counts the
    section's terms weight times, not once. One string per passage, in order."""
    distinct = list(dict.fromkeys(s for s in sections if s))
    section_terms = dict(zip(distinct, fts5_terms(distinct), strict=True))
    out = []
    for terms, section in zip(fts5_terms(texts), sections, strict=True):
        parts = [section_terms.get(section, "")] * SECTION_WEIGHT + [terms]
        out.append(" ".join(p for p in parts if p))
    return out


def query_terms(query: str) -> list[str]:
    """Lower-cased query terms, stopwords dropped unless nothing else is left, duplicates removed."""
    terms = list(dict.fromkeys(t.lower() for t in segment.words(query, _TERM)))
    content = [t for t in terms if t not in STOPWORDS]
    return content or terms


def fts5_query_terms(query: str) -> list[str]:
    """The FTS5 terms of :func:`query_terms` (each word's :func:`stems`, in the query's order), what PostgreSQL's
    BM25 index is asked for. A term twice where two words share it (``"run running"``): FTS5 scores the OR of its
    quoted words, one phrase a word, and pg_textsearch counts a repeated query term as often, so both add it twice.
    (A word FTS5 cuts into several terms is a phrase there and separate terms here: the regular expression of
    :func:`query_terms` keeps runs of letters and digits, as unicode61 does, so this is rare.)"""
    words = query_terms(query)
    return [term for found in stems(words) for term in sorted(found)]


def word_list(text: str) -> list[str]:
    """``text``'s words as the lexical side cuts them (runs of letters and digits), in order."""
    return _TERM.findall(text)


# A text's UTF-8 bytes as :func:`word_places` scans them: ASCII letters lower-cased, each other ASCII byte that is
# not a letter or digit made a space, bytes >= 0x80 (the pieces of non-ASCII characters) kept. Split at spaces,
# they are cut exactly where :data:`_TERM` cuts ASCII text, one byte for one.
_FOLDED_WORDS = bytes(
    b + 32 if 65 <= b <= 90 else b if b >= 0x80 or chr(b).isalnum() else 0x20 for b in range(256)
)
_NON_ASCII_BYTE = re.compile(rb"[\x80-\xff]")


# Above this many prefixes one pass cutting every word costs less than a scan per prefix (a query may hold
# thousands of words: MAX_QUERY_CHARS at the HTTP edge is 10,000 characters).
MAX_PREFIX_SCANS = 16


def word_places(text: str, prefixes: Iterable[str]) -> dict[str, list[int]]:
    """Where the words of ``text`` (as :func:`word_list` cuts them) that are ASCII and begin with one of
    ``prefixes`` (ASCII letters and digits, compared without case; any other prefix is ignored), and those that
    are not ASCII, occur: each such word -> the offsets in ``text`` of its occurrences, in order.

    Up to :data:`MAX_PREFIX_SCANS` prefixes, found without cutting every word: the text's UTF-8 bytes folded
    once, one ``bytes.find`` scan of them per prefix (a prefix that begins with another is the other's scan),
    for the ASCII words it begins (each just after a space there), one scan for the runs between ASCII gaps
    that hold a non-ASCII character, cut by :data:`_TERM`, then the places turned from bytes into characters.
    With more prefixes, every word is cut by :data:`_TERM` and kept by a set lookup of its beginnings. Time
    linear in the text times at most ``MAX_PREFIX_SCANS``, memory linear in the text."""
    wanted = {p.lower() for p in prefixes if p.isascii() and p.isalnum()}
    heads = tuple(h for h in wanted if not any(h[:i] in wanted for i in range(1, len(h))))
    if len(heads) > MAX_PREFIX_SCANS:
        return _places_of_every_word(text, wanted)
    # Most words of a query's hits are no query stem's: scanning for the few that may be costs a quarter of
    # cutting them all (docs/performance.md, "A hit's highlights").
    raw = b" " + text.encode("utf-8", "surrogatepass")  # a space in front: every run follows one
    folded = raw.translate(_FOLDED_WORDS)
    found: list[tuple[int, str]] = []  # (byte offset in text, an ASCII word or a run with non-ASCII characters)
    for prefix in (b" " + h.encode("ascii") for h in heads):
        at = folded.find(prefix)
        while at >= 0:
            end = folded.find(b" ", at + 1)
            end = len(folded) if end < 0 else end
            run = raw[at + 1 : end]
            if run.isascii():  # one word; a run with other characters is the next scan's
                found.append((at, run.decode("ascii")))
            at = folded.find(prefix, end)
    ascii_text = text.isascii()
    if not ascii_text:
        at = 0
        while (hit := _NON_ASCII_BYTE.search(folded, at)) is not None:
            start = folded.rfind(b" ", 0, hit.start()) + 1
            end = folded.find(b" ", hit.end())
            end = len(folded) if end < 0 else end
            found.append((start - 1, raw[start:end].decode("utf-8", "surrogatepass")))
            at = end
        found.sort()  # runs are disjoint: each word's places come in order
    places: dict[str, list[int]] = {}
    byte = char = 0
    for at, piece in found:
        if ascii_text:
            places.setdefault(piece, []).append(at)
            continue
        # The characters between the last place and this one (both begin a run, so the bytes between are whole).
        char += len(raw[1 + byte : 1 + at].decode("utf-8", "surrogatepass"))
        byte = at
        if piece.isascii():
            places.setdefault(piece, []).append(char)
            continue
        for m in _TERM.finditer(piece):
            word = m.group()
            if not word.isascii() or word.lower().startswith(heads):
                places.setdefault(word, []).append(char + m.start())
    return places  # in ASCII text a word is found by one prefix's scan only, which finds its places in order


def _places_of_every_word(text: str, wanted: set[str]) -> dict[str, list[int]]:
    """:func:`word_places` by cutting every word, for many prefixes (``wanted``: lower-cased): each word's
    beginnings of the prefixes' lengths looked up in the set, so the cost does not grow with their number."""
    sizes = sorted({len(p) for p in wanted})
    places: dict[str, list[int]] = {}
    for m in _TERM.finditer(text):
        word = m.group()
        if not word.isascii() or any(word[:n].lower() in wanted for n in sizes):
            places.setdefault(word, []).append(m.start())
    return places


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
    conn = _connection()
    try:
        conn.executemany("INSERT INTO words(rowid, w) VALUES (?, ?)",
                         ((i, segment.for_tokenizer(w)) for i, w in enumerate(words, start=1)))
        found: dict[int, set[str]] = {}
        for term, row in conn.execute("SELECT term, doc FROM words_terms"):
            found.setdefault(int(row), set()).add(str(term))
    finally:
        conn.execute("INSERT INTO words(words) VALUES ('delete-all')")
    return [frozenset(found.get(i, ())) for i in range(1, len(words) + 1)]


# Texts go through the tokenizer this many at a time: a batch's terms are sorted into text order in one statement,
# and smaller batches keep that sort short (2,000 SciFact abstracts: 0.28 s in batches of 100, 0.33 s of 2,000).
TERMS_BATCH = 100


def fts5_terms(texts: Sequence[str]) -> list[str]:
    """Each text's index terms as FTS5 makes them with :data:`TOKENIZER` (lower-cased, accents folded, Porter
    stemmed), in the text's order, joined by single spaces: ``"Alpha-synuclein in COVID-19, 2.5 mg"`` ->
    ``"alpha synuclein in covid 19 2 5 mg"``; ``""`` for a text without a term.

    The real tokenizer in an in-memory, contentless FTS5 table (one per thread), read back through ``fts5vocab``;
    each batch's terms are put in order and joined in SQL, one row per text."""
    conn = _connection()
    out: list[str] = []
    for start in range(0, len(texts), TERMS_BATCH):
        batch = texts[start : start + TERMS_BATCH]
        try:
            conn.executemany("INSERT INTO texts(rowid, t) VALUES (?, ?)",
                             ((i, segment.for_tokenizer(t)) for i, t in enumerate(batch, start=1)))
            joined = dict(conn.execute(_JOINED))
        finally:
            conn.execute("INSERT INTO texts(texts) VALUES ('delete-all')")
        out.extend(joined.get(i, "") for i in range(1, len(batch) + 1))
    return out


# A batch's terms, one row per text: its instances in text order (the sorted subquery), then concatenated per text.
_JOINED = ("SELECT doc, group_concat(term, ' ') FROM (SELECT doc, term FROM texts_terms ORDER BY doc, offset) "
           "GROUP BY doc")


def _connection() -> Any:
    """This thread's in-memory database of the tokenizer's tables: ``words`` for :func:`stems` and ``texts`` for
    :func:`fts5_terms`, both contentless: emptied by one command rather than by tokenizing every row again."""
    # Contentless, a query's new words are analysed in about 4 us each rather than 7.
    conn = getattr(_analysers, "conn", None)
    if conn is None:
        conn = dbapi().connect(":memory:")  # the index's own library: the same tokenizer build
        conn.execute(f"CREATE VIRTUAL TABLE words USING fts5(w, content='', tokenize='{TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE words_terms USING fts5vocab(words, 'instance')")
        conn.execute(f"CREATE VIRTUAL TABLE texts USING fts5(t, content='', tokenize='{TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE texts_terms USING fts5vocab(texts, 'instance')")
        _analysers.conn = conn
    return conn


class Analyzer(Protocol):
    """The lexical side's reading of text, as one interface (the tokenizer every engine and the snippets go
    through): the words of a query, the index terms of a query and of passages, each word's stems, and where a
    text's words that may match stand. :data:`ANALYSIS` is the one in use; another analysis is another class."""

    name: str

    def query_words(self, query: str) -> list[str]:
        """The query's words: lower-cased, stopwords dropped unless nothing else is left, duplicates removed."""
        ...

    def query_terms(self, query: str) -> list[str]:
        """The index terms of the query's words, in its order (a term twice where two words share it)."""
        ...

    def index_terms(self, texts: Sequence[str], sections: Sequence[str]) -> list[str]:
        """Each passage's index terms, its section path's weighted by repetition, joined by spaces."""
        ...

    def stems(self, words: Sequence[str]) -> list[frozenset[str]]:
        """The index terms of each word (usually one; none for a word the analysis drops)."""
        ...

    def word_places(self, text: str, prefixes: Iterable[str]) -> dict[str, list[int]]:
        """Where the words of ``text`` that begin with one of ``prefixes`` start (see :func:`word_places`)."""
        ...


class Fts5Analysis:
    """FTS5's ``porter unicode61 remove_diacritics 2`` (:data:`TOKENIZER`), run by FTS5 itself, with the query
    parsing and stopwords above: the folder's FTS5 table, the tantivy index (fed these terms), PostgreSQL's BM25
    field and the snippets all read it."""

    name = TOKENIZER

    def query_words(self, query: str) -> list[str]:
        return query_terms(query)

    def query_terms(self, query: str) -> list[str]:
        return fts5_query_terms(query)

    def index_terms(self, texts: Sequence[str], sections: Sequence[str]) -> list[str]:
        return lexical_fields(texts, sections)

    def stems(self, words: Sequence[str]) -> list[frozenset[str]]:
        return stems(words)

    def word_places(self, text: str, prefixes: Iterable[str]) -> dict[str, list[int]]:
        return word_places(text, prefixes)


# The analysis in use: what every lexical engine indexes and asks, and what the snippets highlight.
ANALYSIS: Analyzer = Fts5Analysis()
