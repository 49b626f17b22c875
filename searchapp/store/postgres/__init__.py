"""The PostgreSQL backend: documents, passages, settings, a pgvector column and a pg_textsearch BM25 index, in
one schema per index. Nothing is kept in the process beyond a connection pool, so any number of serving
processes on any number of hosts answer from the same committed state.

- Dense: ``passages.embedding vector(d)``, inner product on unit vectors (``<#>`` is its negative). Exact (a
  sequential scan) below the policy's threshold, an HNSW index above it, built after the rows are loaded. Per
  query ``hnsw.ef_search`` is raised to :data:`EF_SEARCH_MIN` (recall) and to the number of rows asked for (its
  default, 40, silently caps a ``LIMIT 100``) and, with a filter, ``hnsw.iterative_scan`` is on (else a narrow
  filter returns fewer than ``k`` rows).
- Lexical: real BM25 from pg_textsearch (``lexical_text <@> to_bm25query(q, index)``, negated), never ``ts_rank``,
  over ``passages_lexical``: a row per passage holding the FTS5 terms of its section path
  (``analysis.SECTION_WEIGHT`` times) and of its text (``analysis.lexical_fields``), since pg_textsearch indexes
  one plain column; a table of its own, so the passages' rows, which the exact vector scan reads, are as narrow as
  without it. The terms are FTS5's (the folder backend's tokenizer), read under a text configuration that neither
  stems nor drops a word (:data:`TEXT_CONFIG`), and queries ask for the FTS5 terms of their words: both backends
  count the same terms. Without the extension, lexical
  and hybrid queries raise ``ConfigError`` saying what to install; dense queries work. pg_textsearch does not
  take deleted rows out of its corpus statistics until the index is rebuilt: the store counts the passages
  deleted since the last rebuild and rebuilds the index when a writer finishes, so scores are those of the rows
  present.
- Hybrid: one statement takes each side's top ``k0`` within the filter and returns every candidate with both
  real scores.
- One writer: a session advisory lock keyed by the schema (``IndexLockedError`` for a second writer); a
  group of documents is one transaction, so readers see whole groups only.

The modules, by concern: ``location`` (the URL, the index's schema and the store's URL parameters), ``server``
(versions, warnings, why a connection cannot write), ``connections`` (the query pool, writes on connections of
their own, connections newer than the last BM25 rebuild), ``ddl`` (the BM25 and HNSW indexes and the vector
column's type), ``vector`` (the vector value's one wire form), ``copy_in`` (rows in by binary COPY), ``stores``
(``PostgresStores``: opening, the writer's lock, the record hooks) and ``reader`` (``PostgresReader``: the read
statements).
"""

from searchapp.store.postgres.ddl import TEXT_CONFIG
from searchapp.store.postgres.location import parse_location
from searchapp.store.postgres.reader import EF_SEARCH_MIN
from searchapp.store.postgres.server import version_warnings
from searchapp.store.postgres.stores import PostgresStores

__all__ = ["EF_SEARCH_MIN", "TEXT_CONFIG", "PostgresStores", "parse_location", "version_warnings"]
