"""Persistent, incremental BM25 over SQLite FTS5, living in the same database as the passages: the folder
backend's lexical index (:class:`Fts5Index`, ``store/lexical_index.py``'s interface).

FTS5's ``bm25()`` uses k1 = 1.2, b = 0.75 and idf = ln((N - n + 0.5) / (n + 0.5)), floored at 1e-6 for terms in
more than half of the rows (rank_bm25's BM25Okapi floors at 0.25 x the mean idf instead); docs/architecture.md
states the difference. Scores here are made positive (FTS5 returns them negated so smaller sorts first).

Queries are turned into an OR of their quoted terms (``analysis.query_terms``: stopwords dropped). The FTS5
table's tokenizer is ``analysis.TOKENIZER``, given each text as ``segment.for_tokenizer`` writes it (runs of
Chinese, Japanese and Thai cut into two-letter units). The table indexes that, not the stored text, so FTS5's
``rebuild`` and content-comparing ``integrity-check`` hold only for an index without such runs (migration 0011
indexes them again by delete and insert). It has two columns (migration 0006): the passage's text and its
section path (the headings it sits under), the latter weighted ``analysis.SECTION_WEIGHT`` times the text in
``bm25()``: a page's topic, named by its headings, counts for every passage under them. A passage without a
section scores as it would with one column.

A query can be scored in parts, each over one range of rowids (:func:`parts`, on a connection and a thread of
its own, then :func:`merge`): ``bm25()`` takes N, the average length and each term's document frequency from the
whole table whatever the range, so a passage scores the same in a part as in the whole, and FTS5 seeks to a
range's first rowid in each posting list rather than reading what lies before it. On a large index the parts
run on several cores at once (``store/folder.py``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, text

from searchapp.analysis import ANALYSIS, SECTION_WEIGHT
from searchapp.segment import for_tokenizer
from searchapp.store.filter_sql import Restrict
from searchapp.store.lexical_index import Access, SessionContext
from searchapp.store.records import MAX_PARAMS
from searchapp.types import Run

log = logging.getLogger(__name__)

# A range of rowids, both ends included; None: every passage.
Part = tuple[int, int] | None
T = TypeVar("T")

# bm25()'s weight of a match in the section column against one in the text: the one declared for both engines.
_BM25 = f"bm25(passages_fts, 1.0, {SECTION_WEIGHT})"


def match_expression(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: the OR of the terms, each quoted so none is read as an operator."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def index_passages(conn: Connection, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> None:
    """Add passages (their texts and section paths) to the inverted index, in the transaction that inserts them."""
    conn.execute(
        text("INSERT INTO passages_fts(rowid, text, section) VALUES (:id, :text, :section)"),
        _rows_of(ids, texts, sections),
    )


def unindex_passages(conn: Connection, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> None:
    """Remove passages from the inverted index; FTS5 needs the values that were indexed to undo it."""
    conn.execute(
        text("INSERT INTO passages_fts(passages_fts, rowid, text, section) VALUES ('delete', :id, :text, :section)"),
        _rows_of(ids, texts, sections),
    )


def _rows_of(ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> list[dict[str, Any]]:
    """The FTS5 rows of passages: their texts and section paths as the tokenizer is given them (runs of scripts
    written without spaces cut into units, ``segment.py``; any other text as it is), so that an index and its
    undoing read the same terms."""
    return [{"id": i, "text": for_tokenizer(t), "section": for_tokenizer(s)}
            for i, t, s in zip(ids, texts, sections, strict=True)]


def _restricted(restrict: Restrict | None, part: Part = None) -> tuple[str, dict[str, Any]]:
    """`` AND rowid IN (...)`` for a SELECT of allowed passage ids with its parameters (``filter_sql.passages_sql``),
    and `` AND rowid BETWEEN ...`` for a part."""
    where, params = ("", {}) if restrict is None else (f" AND rowid IN ({restrict[0]})", dict(restrict[1]))
    if part is not None:
        where += " AND rowid BETWEEN :part_lo AND :part_hi"
        params.update(part_lo=part[0], part_hi=part[1])
    return where, params


def parts(conn: Connection, n: int) -> list[Part]:
    """The passages' rowids cut into ``n`` ranges of equal width (fewer where there are fewer ids), lowest first;
    ``[None]`` for an empty index or ``n`` <= 1. Ids are handed out in order, so equal widths hold about equal
    numbers of passages unless whole stretches were removed."""
    if n <= 1:
        return [None]
    lo, hi = _rows(conn, "SELECT (SELECT min(id) FROM passages), (SELECT max(id) FROM passages)", {})[0]
    if lo is None:
        return [None]
    n = min(n, hi - lo + 1)
    cuts = [lo + (hi - lo + 1) * i // n for i in range(n + 1)]
    return [(cuts[i], cuts[i + 1] - 1) for i in range(n)]


def merge(runs: Sequence[Run], k: int) -> Run:
    """The ``k`` best of the parts' runs (disjoint passages), in :func:`search`'s order: score, then rowid."""
    return sorted((hit for run in runs for hit in run), key=lambda h: (-h[1], h[0]))[:k]


def _rows(conn: Connection, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """``sql``'s rows (none for a write), run on the connection's sqlite3 connection itself: these few
    statements run on every query, and SQLAlchemy's statement and result layers cost about as much as FTS5 takes
    to score a thousand matches (fixed text with named parameters: nothing of those layers is needed here)."""
    return conn.connection.driver_connection.execute(sql, params).fetchall()  # type: ignore[union-attr]


def search(conn: Connection, query: str, k: int, restrict: Restrict | None = None, part: Part = None) -> Run:
    """The ``k`` best passages for ``query`` by BM25: ``[(passage_id, score)]``, best first, scores > 0.

    ``restrict``: only passages among the ids this SQL SELECT returns (with its parameters); ``part``: only
    passages in this range of ids.
    """
    terms = ANALYSIS.query_words(query)
    if not terms or k <= 0:
        return []
    where, params = _restricted(restrict, part)
    # Sorted by the selected score itself: ORDER BY bm25() would be a second call of it for every match.
    rows = _rows(
        conn,
        f"SELECT rowid, -{_BM25} AS s FROM passages_fts WHERE passages_fts MATCH :q{where} "
        "ORDER BY s DESC, rowid LIMIT :k",
        {"q": match_expression(terms), "k": k, **params},
    )
    return [(int(r[0]), float(r[1])) for r in rows]


def scores(conn: Connection, query: str, ids: Sequence[int]) -> dict[int, float]:
    """BM25 scores of the given passages for ``query``; a passage that matches no term scores 0."""
    out = dict.fromkeys(ids, 0.0)
    terms = ANALYSIS.query_words(query)
    if not terms or not ids:
        return out
    expr = match_expression(terms)
    for placeholders, params in _id_lists(ids):
        rows = _rows(
            conn,
            f"SELECT rowid, -{_BM25} FROM passages_fts WHERE passages_fts MATCH :q AND rowid IN ({placeholders})",
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

    Use as a context manager on one connection; the table is emptied on exit. ``part``: only the passages in
    this range of ids (the other parts on other connections: :class:`MatchParts`).
    """

    def __init__(
        self, conn: Connection, query: str, k: int, restrict: Restrict | None = None, part: Part = None
    ) -> None:
        self.conn = conn
        self.top: Run = []
        self.terms = ANALYSIS.query_words(query)
        if not self.terms or k <= 0:
            return
        _rows(conn, "CREATE TEMP TABLE IF NOT EXISTS lexical_matches (id INTEGER PRIMARY KEY, s REAL)", {})
        where, params = _restricted(restrict, part)
        try:
            # FTS5 yields rowids in ascending order, so the inserts append to the temporary b-tree.
            _rows(
                conn,
                f"INSERT INTO temp.lexical_matches SELECT rowid, -{_BM25} FROM passages_fts "
                f"WHERE passages_fts MATCH :q{where}",
                {"q": match_expression(self.terms), **params},
            )
            rows = _rows(conn, "SELECT id, s FROM temp.lexical_matches ORDER BY s DESC, id LIMIT :k", {"k": k})
        except BaseException:
            # Left filled, the table would collide with (or leak into) the next query's matches on this connection.
            self.__exit__(None, None, None)
            raise
        self.top = [(int(r[0]), float(r[1])) for r in rows]

    def scores(self, ids: Sequence[int]) -> dict[int, float]:
        """BM25 of the given passages (0 for those that match no term)."""
        out = dict.fromkeys(ids, 0.0)
        if not self.terms:
            return out
        for placeholders, params in _id_lists(ids):
            rows = _rows(self.conn, f"SELECT id, s FROM temp.lexical_matches WHERE id IN ({placeholders})", params)
            out.update((int(r[0]), float(r[1])) for r in rows)
        return out

    def __enter__(self) -> Matches:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.terms:
            _rows(self.conn, "DELETE FROM temp.lexical_matches", {})


class MatchParts:
    """One query's :class:`Matches` in parts (disjoint ranges, one connection each), read as one: the top ``k``
    of them all, and any passage's score from the part that holds it. Takes ownership of the parts: exiting
    empties every part's table."""

    def __init__(self, parts: Sequence[Matches], k: int) -> None:
        self.parts = list(parts)
        self.top = merge([m.top for m in self.parts], k)

    def scores(self, ids: Sequence[int]) -> dict[int, float]:
        """BM25 of the given passages (0 for those that match no term)."""
        out = dict.fromkeys(ids, 0.0)
        for m in self.parts:
            for pid, s in m.scores(ids).items():
                if s:
                    out[pid] = s
        return out

    def __enter__(self) -> MatchParts:
        return self

    def __exit__(self, *exc: object) -> None:
        for m in self.parts:
            m.__exit__(*exc)


def idf(conn: Connection, query: str) -> dict[str, float]:
    """Each query term's IDF as ``bm25()`` computes it: ``ln((N - n + 0.5) / (n + 0.5))`` (1e-6 where that is not
    positive), N the rows of the table and n those the term (one quoted phrase of :func:`match_expression`)
    matches in any column. Counts the term's whole posting list: for explaining a ranking, not for every query."""
    terms = ANALYSIS.query_words(query)
    if not terms:
        return {}
    n_rows = _rows(conn, "SELECT count(*) FROM passages", {})[0][0]  # FTS5's rows: every passage, kept in step
    out = {}
    for term in terms:
        hits = _rows(conn, "SELECT count(*) FROM passages_fts WHERE passages_fts MATCH :q",
                     {"q": match_expression([term])})[0][0]
        weight = math.log((n_rows - hits + 0.5) / (hits + 0.5))
        out[term] = weight if weight > 0 else 1e-6
    return out


class Fts5Index:
    """The FTS5 lexical index (``store/lexical_index.py``'s interface): the ``passages_fts`` table, in the same
    database and the same transactions as the passages."""

    name = "fts5"

    def __init__(self, folder: Path | None = None) -> None:
        pass  # in the database itself: nothing of its own in the folder

    def ready(self, connect: Callable[[], Connection], passages: Callable[[], Iterator[tuple[int, str, str]]],
              access: Access) -> None:
        pass  # written in the records' own transactions: always current

    def committed(self) -> None:
        pass

    def abandoned(self) -> None:
        pass

    def build(self, connect: Callable[[], Connection], passages: Callable[[], Iterator[tuple[int, str, str]]]) -> int:
        return 0  # all of it in the records: filled in the switching transaction

    def fill(self, conn: Connection, passages: Callable[[], Iterator[tuple[int, str, str]]]) -> int:
        n, batch = 0, []
        for row in passages():
            batch.append(row)
            if len(batch) >= 5_000:
                n += self._fill(conn, batch)
                batch = []
                if n % 100_000 == 0:
                    log.warning("... %d passages", n)
        return n + self._fill(conn, batch)

    @staticmethod
    def _fill(conn: Connection, rows: Sequence[tuple[int, str, str]]) -> int:
        if rows:
            index_passages(conn, [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
        return len(rows)

    def clear(self, conn: Connection) -> None:
        conn.execute(text("INSERT INTO passages_fts(passages_fts) VALUES ('delete-all')"))

    def retire(self) -> None:
        pass  # nothing outside the records

    def add(self, conn: Connection, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> None:
        index_passages(conn, ids, texts, sections)

    def remove(self, conn: Connection, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> None:
        unindex_passages(conn, ids, texts, sections)

    def session(self, context: SessionContext) -> Fts5Session:
        return Fts5Session(context)

    def size(self, conn: Connection) -> int:
        """The bytes of FTS5's shadow tables' payload: the posting lists and structure (``_data``), the rows'
        token counts (``_docsize``) and the term index (``_idx``), without SQLite's page overhead (the SQLite
        library searchapp uses here has no ``dbstat``)."""
        return int(_rows(conn, "SELECT (SELECT coalesce(sum(length(block)), 0) FROM passages_fts_data) + "
                               "(SELECT coalesce(sum(length(sz)), 0) FROM passages_fts_docsize) + "
                               "(SELECT coalesce(sum(length(term)) + 16 * count(*), 0) FROM passages_fts_idx)",
                         {})[0][0])


class Fts5Session:
    """A read session's FTS5 side. On a large index (``parallel_min`` ids or more, several cores) a query is
    scored in parts, each a range of ids on a connection of its own, the first on the caller's thread and the
    others on the query threads; the parts' results read as one (:func:`merge`, :class:`MatchParts`)."""

    def __init__(self, context: SessionContext) -> None:
        self.context = context
        self.conn = context.conn
        self.restrict = context.restrict

    @cached_property
    def parts(self) -> list[tuple[Connection, Part]]:
        """The parts, each a range of ids on a connection of its own (the first is the session's); worked out at
        the session's first lexical search, so a dense session neither asks nor holds more."""
        c = self.context
        ranges = parts(self.conn, c.max_parts if c.stack is not None else 1)
        first, last = ranges[0], ranges[-1]
        if c.stack is None or first is None or last is None or last[1] - first[0] + 1 < c.parallel_min:
            return [(self.conn, None)]
        others = [c.stack.enter_context(c.connect()) for _ in ranges[1:]]
        return list(zip([self.conn, *others], ranges, strict=True))

    def search(self, query: str, k: int) -> Run:
        if len(self.parts) == 1:
            return search(self.conn, query, k, self.restrict)
        return merge(self._in_parts(lambda conn, part: search(conn, query, k, self.restrict, part)), k)

    def matches(self, query: str, k: int) -> Matches | MatchParts:
        if len(self.parts) == 1:
            return Matches(self.conn, query, k, self.restrict)
        found = self._in_parts(lambda conn, part: Matches(conn, query, k, self.restrict, part),
                               undo=lambda m: m.__exit__(None, None, None))
        return MatchParts(found, k)

    def idf(self, query: str) -> dict[str, float]:
        return idf(self.conn, query)

    def _in_parts(self, fn: Callable[[Connection, Part], T], undo: Callable[[T], None] | None = None) -> list[T]:
        """``fn(connection, part)`` for every part at once, the first on this thread and the others on the query
        threads; the results in part order. If one fails, ``undo`` is given each result that did not, and the
        first error is raised."""
        pool = self.context.pool()
        pending = [pool.submit(fn, conn, part) for conn, part in self.parts[1:]]
        out: list[T] = []
        error: BaseException | None = None
        try:
            out.append(fn(*self.parts[0]))
        except BaseException as exc:
            error = exc
        for future in pending:
            try:
                out.append(future.result())
            except BaseException as exc:
                error = error or exc
        if error is not None:
            if undo is not None:
                for result in out:
                    undo(result)
            raise error
        return out
