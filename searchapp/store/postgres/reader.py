"""A read session of a PostgreSQL index: the statements of its dense, lexical and hybrid reads (the indexes'
ordered top-k scans, hybrid candidates in one statement) and the per-query HNSW settings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from sqlalchemy import Connection, text

from searchapp.analysis import ANALYSIS
from searchapp.errors import ConfigError
from searchapp.filters import Filter
from searchapp.store.base import Reader
from searchapp.store.filter_sql import passages_sql
from searchapp.store.postgres.ddl import BM25_INDEX, bm25_installed, has_index
from searchapp.store.rows import Candidates, PassageRecord
from searchapp.types import COSINE_MIN, Run

# The least hnsw.ef_search a query runs with (pgvector's default is 40): recall@10 against exact search at 1M
# vectors drawn around real ones was 0.846 at 40, 0.929 at 100, 0.961 at 200 and 0.983 at 400, at 1.2, 1.7, 2.7
# and 4.4 ms a query (docs/postgres.md, "Dense recall@10 at 1M"); 200 is the least of these above 0.95.
EF_SEARCH_MIN = 200
# pgvector's limit on hnsw.ef_search.
_MAX_EF = 1000
_NO_BM25_INDEX = (
    "lexical and hybrid ranking on PostgreSQL need the index's BM25 index (passages_bm25), which is missing: open "
    "the index once for writing (any ingest) to build it; dense queries work without it"
)
_NO_BM25 = (
    "lexical and hybrid ranking on PostgreSQL need the pg_textsearch extension (PostgreSQL 17 or 18, with "
    "shared_preload_libraries = 'pg_textsearch', then CREATE EXTENSION pg_textsearch): it is not installed in "
    "this database; dense queries work without it"
)


class ReadStores(Protocol):
    """What a read session needs of its stores (``PostgresStores``)."""

    schema: str
    vector_type: str
    has_bm25: bool  # the BM25 index was there when last looked at

    def hydrate(self, ids: Sequence[int], conn: Connection | None = None) -> dict[int, PassageRecord]: ...

    def documents_of(self, ids: Sequence[int], conn: Connection) -> dict[int, int]: ...


class PostgresReader(Reader):
    """A read session: one connection, one transaction (so ``SET LOCAL`` settings last for it)."""

    def __init__(self, stores: ReadStores, conn: Connection, flt: Filter | None) -> None:
        self.stores = stores
        self.conn = conn
        self.filtered = False
        self.scope, self.params = "", {}
        if flt is not None and not flt.empty:
            sql, self.params = passages_sql(flt, dialect="postgresql")
            self.scope, self.filtered = f" AND p.id IN ({sql})", True
        self._ef = 0
        # The query vector, bound as a float32 array (vector.register), as the stored type (a float32 query
        # against halfvec rows is cast down, as they were).
        self._qvec = "CAST(:v AS vector)"
        if stores.vector_type != "vector":
            self._qvec = f"CAST({self._qvec} AS {stores.vector_type})"

    def _tune(self, k: int) -> None:
        ef = min(_MAX_EF, max(EF_SEARCH_MIN, k))
        if ef > self._ef:
            self.conn.execute(text(f"SET LOCAL hnsw.ef_search = {ef}"))
            # A filter, or more rows than ef_search may be, would otherwise end the scan short of k.
            if (self.filtered or k > _MAX_EF) and self._ef == 0:
                self.conn.execute(text("SET LOCAL hnsw.iterative_scan = relaxed_order"))
            self._ef = ef

    def _bm25(self) -> str:
        if not self.stores.has_bm25:  # made since this store opened?
            self.stores.has_bm25 = has_index(self.conn, self.stores.schema, BM25_INDEX)
        if not self.stores.has_bm25:
            raise ConfigError(_NO_BM25_INDEX if bm25_installed(self.conn) else _NO_BM25)
        return f"to_bm25query(CAST(:q AS text), '{self.stores.schema}.{BM25_INDEX}')"

    def lexical(self, query: str, k: int) -> Run:
        query = " ".join(ANALYSIS.query_terms(query))
        if not query:  # nothing to match (punctuation only), as in a folder index
            return []
        rows = self.conn.execute(text(self._top_bm25("k")), {"q": query, "k": k, **self.params})
        return _bm25_run(rows)

    def _top_bm25(self, limit: str) -> str:
        """pg_textsearch's ordered top-k: the bare ``ORDER BY lexical_text <@> q LIMIT n`` its Block-Max WAND scan
        serves (over ``passages_lexical``, aliased ``p`` as the filter's scope names it: the same ids).
        No ``<@>`` in WHERE (scored on its own, outside the scan) and no second sort key (an incremental sort
        above the scan that reads far more of it): the run's tie order and non-matches are settled in Python
        (:func:`_bm25_run`)."""
        bq = self._bm25()
        where = f" WHERE TRUE{self.scope}" if self.scope else ""
        return (f"SELECT p.id, -(p.lexical_text <@> {bq}) AS s FROM passages_lexical p{where} "
                f"ORDER BY p.lexical_text <@> {bq} LIMIT :{limit}")

    def dense(self, qvec: np.ndarray, k: int) -> Run:
        self._tune(k)
        rows = self.conn.execute(
            text(f"SELECT p.id, -(p.embedding <#> {self._qvec}) AS s FROM passages p WHERE TRUE{self.scope} "
                 f"ORDER BY p.embedding <#> {self._qvec} LIMIT :k"),
            {"v": qvec, "k": k, **self.params},
        )
        # HNSW's relaxed order may return near-ties out of order: the run is sorted as every run is.
        return sorted(((int(i), float(s)) for i, s in rows), key=lambda x: (-x[1], x[0]))

    def gather(self, query: str, qvec: np.ndarray, k0: int) -> Candidates:
        terms = " ".join(ANALYSIS.query_terms(query))
        if not terms:  # no term to match: the dense side's candidates, each with BM25 0
            dense = dict(self.dense(qvec, k0))
            return Candidates(query, dense, dict.fromkeys(dense, 0.0))
        return self._gather(query, terms, qvec, k0)

    def _gather(self, query: str, terms: str, qvec: np.ndarray, k0: int) -> Candidates:
        """One statement: the dense top ``k0`` (``dn``, HNSW above the threshold), the lexical top ``k0`` (``lt``,
        the BM25 index's ordered top-k), and for every candidate its cosine and BM25: a lexical candidate's from
        the scan, a dense-only candidate's scored on its own (a handful of rows, whatever the corpus size; a
        connection that never wrote scores it right, see ``PostgresStores.write_engine``)."""
        bq = self._bm25()
        self._tune(k0)
        rows = self.conn.execute(
            text(
                "WITH dn AS MATERIALIZED (SELECT p.id FROM passages p WHERE TRUE" + self.scope
                + f" ORDER BY p.embedding <#> {self._qvec} LIMIT :k0), "
                f"lt AS MATERIALIZED ({self._top_bm25('k0')}) "
                # The candidates' rows by key (an array of ids: a join could read the table through), and a
                # dense-only candidate's BM25 field by its key too (a subquery: a join to passages_lexical was
                # planned as a sequential scan of it, tests/integration/test_postgres_plans.py).
                f"SELECT p.id, -(p.embedding <#> {self._qvec}), coalesce(lt.s, -(SELECT l.lexical_text <@> {bq} "
                "FROM passages_lexical l WHERE l.id = p.id)) FROM passages p LEFT JOIN lt ON lt.id = p.id "
                "WHERE p.id = ANY(ARRAY(SELECT id FROM dn UNION SELECT id FROM lt))"
            ),
            {"q": terms, "v": qvec, "k0": k0, **self.params},
        )
        dense: dict[int, float] = {}
        lexical: dict[int, float] = {}
        for pid, cos, bm25 in rows:
            dense[int(pid)] = float(cos) if cos is not None else COSINE_MIN
            lexical[int(pid)] = max(float(bm25), 0.0)  # a non-match scores 0 (its <@> is -0)
        return Candidates(query, dense, lexical)

    def hydrate(self, ids: Sequence[int]) -> dict[int, PassageRecord]:
        return self.stores.hydrate(ids, self.conn)

    def documents_of(self, ids: Sequence[int]) -> dict[int, int]:
        return self.stores.documents_of(ids, self.conn)


def _bm25_run(rows: Any) -> Run:
    """An ordered BM25 scan's rows as a run: matches only (a non-match scores 0), each passage once (pg_textsearch
    1.0.0's scan can return a row twice), ties in id order as in every run."""
    best: dict[int, float] = {}
    for pid, score in rows:
        if score > 0:
            best.setdefault(int(pid), float(score))
    return sorted(best.items(), key=lambda x: (-x[1], x[0]))
