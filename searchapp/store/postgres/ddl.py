"""The DDL of an index's schema beyond its migrations, and the upkeep of its indexes: the pg_textsearch BM25 index
over ``passages_lexical`` with its text configuration, the HNSW index of the vector column (with the memory its
build needs), and the vector column's type and dimension."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, text

from searchapp.store.postgres.location import VECTOR_TYPES

BM25_INDEX = "passages_bm25"
# The BM25 index's text configuration: a copy of ``simple`` (lower-case, no stemmer, no stopword), so what
# pg_textsearch counts is the FTS5 terms written to passages_lexical. PostgreSQL's default parser does not cut such
# a term further: a term is a run of letters and digits (unicode61's token characters), which the parser keeps as
# one word, number or numword token (``h2o``, ``1e5``, ``007``), never one of its compound kinds (those need a
# hyphen, dot, slash or @ between the characters). Non-ASCII characters are letters to it in a database of the C
# locale (tests/integration/test_postgres.py); under another locale a character its iswalpha() refuses (``½``,
# ``²``, private-use ones) separates words, and a term of over 2,047 characters is dropped (PostgreSQL's limit).
TEXT_CONFIG = "searchapp_terms"
HNSW_INDEX = "passages_hnsw"
# An HNSW graph's bytes per row beyond its vector (pgvector's estimate: neighbour lists, tuple headers), and the
# allowance on top: N x (8 + bytes per vector) x 1.3 (docs/postgres.md, Sizing).
_HNSW_ROW_OVERHEAD, _HNSW_SLACK = 8, 1.3


def quoted(schema: str) -> str:
    """The schema as a quoted identifier (a reserved word is a valid name)."""
    return f'"{schema}"'


def has_index(conn: Connection, schema: str, name: str) -> bool:
    found = conn.execute(text("SELECT to_regclass(:i) IS NOT NULL"), {"i": f"{quoted(schema)}.{name}"})
    return bool(found.scalar_one())


def bm25_installed(conn: Connection) -> bool:
    """Whether the pg_textsearch extension is installed in this database."""
    return conn.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'pg_textsearch'")).first() is not None


def create_bm25(conn: Connection, schema: str) -> None:
    """The BM25 index over the passages' lexical field (``passages_lexical``: section path and text), with the
    index's text configuration (made if missing)."""
    q, cfg = quoted(schema), TEXT_CONFIG
    # The field holds FTS5's terms already (stemmed, every word kept, as the folder's FTS5 index has them): the
    # configuration only splits them at their spaces. (It may outlive the index: dropping the extension drops
    # the index only.)
    if conn.execute(text("SELECT 1 FROM pg_ts_config c JOIN pg_namespace n ON n.oid = c.cfgnamespace "
                         "WHERE n.nspname = :s AND c.cfgname = :c"), {"s": schema, "c": cfg}).first() is None:
        conn.execute(text(f"CREATE TEXT SEARCH CONFIGURATION {q}.{cfg} (COPY = pg_catalog.simple)"))
    conn.execute(text(f"CREATE INDEX {BM25_INDEX} ON passages_lexical USING bm25(lexical_text) "
                      f"WITH (text_config='{q}.{cfg}')"))


def drop_bm25(conn: Connection) -> None:
    conn.execute(text(f"DROP INDEX {BM25_INDEX}"))


def reindex_bm25(conn: Connection) -> None:
    """Rebuilt concurrently (``conn`` in autocommit): queries go on meanwhile, with the old statistics."""
    conn.execute(text(f"REINDEX INDEX CONCURRENTLY {BM25_INDEX}"))


def create_hnsw(conn: Connection, vector_type: str) -> None:
    conn.execute(text(f"CREATE INDEX {HNSW_INDEX} ON passages USING hnsw (embedding {vector_type}_ip_ops)"))


def drop_hnsw(conn: Connection) -> None:
    conn.execute(text(f"DROP INDEX {HNSW_INDEX}"))


def set_build_settings(
    conn: Connection, given: dict[str, str], vector_type: str, dimension: Callable[[], int], rows: int = 0
) -> None:
    """Memory and parallel workers for an index build, for this session: the URL's (``given``), else
    ``maintenance_work_mem`` raised (never lowered) to the HNSW graph's estimate for ``rows``, N x (8 + bytes
    per vector) x 1.3, so the graph is built in memory (pgvector's build slows down sharply once it is not);
    parallel maintenance workers as the server allows (``max_parallel_maintenance_workers``, default 2)."""
    settings = dict(given)
    if "maintenance_work_mem" not in settings and rows:
        per_vector = (2 if vector_type == "halfvec" else 4) * int(dimension())
        need_kb = int(rows * (_HNSW_ROW_OVERHEAD + per_vector) * _HNSW_SLACK / 1024) + 1
        have_kb = int(conn.execute(text("SELECT setting FROM pg_settings WHERE name = 'maintenance_work_mem'"))
                      .scalar_one())
        if need_kb > have_kb:
            settings["maintenance_work_mem"] = f"{need_kb}kB"
    for name, value in settings.items():
        conn.execute(text("SELECT set_config(:n, :v, false)"), {"n": name, "v": value.replace(" ", "")})


def stored_vector_type(conn: Connection, schema: str) -> str:
    """The type of the stored vectors, ``vector`` or ``halfvec``."""
    stored = conn.execute(
        text("SELECT t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
             "WHERE a.attrelid = to_regclass(:t) AND a.attname = 'embedding'"), {"t": f"{quoted(schema)}.passages"},
    ).scalar_one_or_none()
    return stored if stored in VECTOR_TYPES else "vector"


def retype_vectors(conn: Connection, vector_type: str) -> None:
    """The vector column made ``vector_type`` (a new index's choice; its type is the record of it)."""
    conn.execute(text(f"ALTER TABLE passages ALTER COLUMN embedding TYPE {vector_type} "
                      f"USING embedding::{vector_type}"))


def type_vectors(conn: Connection, schema: str, dimension: Callable[[], int]) -> None:
    """Give the embedding column its dimension (needed by HNSW), once the encoder's is known."""
    typed = conn.execute(
        text("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
             "WHERE attrelid = to_regclass(:t) AND attname = 'embedding'"),
        {"t": f"{quoted(schema)}.passages"},
    ).scalar_one()
    if typed in VECTOR_TYPES:
        # Kept in the row (STORAGE MAIN; pgvector's default is EXTERNAL): a vector beside the text makes
        # the row pass the TOAST threshold, and an exact scan would then fetch every vector out of line.
        # MAIN, not PLAIN: a row too wide for a page still moves it out as a last resort.
        d = int(dimension())
        conn.execute(text(f"ALTER TABLE passages ALTER COLUMN embedding TYPE {typed}({d}), "
                          "ALTER COLUMN embedding SET STORAGE MAIN"))
