"""The PostgreSQL backend's query plans, read from ``EXPLAIN``: the statements a search runs use the indexes.
The lexical side is pg_textsearch's ordered top-k scan of the BM25 index (over ``passages_lexical``, each passage's
section path and text) with nothing filtering or sorting above it
(a filter or a second sort key makes the scan read far more than the top k), and the dense side above the
threshold is the HNSW index's scan (never a sequential scan of ``passages``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from searchapp import Index, IndexConfig
from tests.integration.test_postgres import RandomEncoder

pytestmark = pytest.mark.usefixtures("pg_server")


@contextlib.contextmanager
def statements(ix: Index) -> Iterator[list[tuple[str, Any]]]:
    """The SELECTs the index's query connections run meanwhile, with their parameters."""
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if "ORDER BY" in statement and "<" in statement:
            seen.append((statement, parameters))

    sa.event.listen(ix.stores.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(ix.stores.engine, "before_cursor_execute", record)


def plan(ix: Index, statement: str, parameters: Any) -> dict[str, Any]:
    """The statement's plan as PostgreSQL gives it (``EXPLAIN (FORMAT JSON)``), under a query's settings."""
    with ix.stores.engine.connect() as conn, conn.begin():
        conn.exec_driver_sql("SET LOCAL hnsw.ef_search = 100")
        rows = conn.exec_driver_sql("EXPLAIN (FORMAT JSON) " + statement, parameters).scalar_one()
    return rows[0]["Plan"]  # type: ignore[no-any-return]


def nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from nodes(child)


def bare_top_k(node: dict[str, Any], index: str) -> bool:
    """A Limit straight over an index scan of ``index`` ordered by the index, with no filter."""
    if node["Node Type"] != "Limit" or len(node.get("Plans", [])) != 1:
        return False
    scan = node["Plans"][0]
    return (scan["Node Type"] == "Index Scan" and scan["Index Name"] == index and "Order By" in scan
            and "Filter" not in scan)


def cte(node: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in nodes(node) if n.get("Subplan Name") == f"CTE {name}")


@pytest.fixture(scope="module")
def hnsw_index(pg_server) -> Iterator[Index]:  # type: ignore[no-untyped-def]
    n = 3000
    texts = [f"entry {i} of the common words" + (" zebra stripes" if i % 7 == 0 else "") for i in range(n)]
    config = IndexConfig(vector_index="ivf")  # approximate at any size: HNSW on PostgreSQL
    with Index(pg_server.url("searchapp_test") + "&schema=plans", create=True, config=config,
               encoder=RandomEncoder()) as ix:
        ix.add_texts(texts, ids=[f"d{i}" for i in range(n)])
        with ix.stores.write_engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE passages")
            conn.exec_driver_sql("ANALYZE passages_lexical")
        assert ix.stats().vector_index == "hnsw"
        yield ix


def test_lexical_is_the_bm25_index_ordered_top_k(hnsw_index: Index) -> None:
    with statements(hnsw_index) as seen:
        assert hnsw_index.search("zebra stripes", k=10, mode="lexical")
    (statement, parameters), = seen
    assert bare_top_k(plan(hnsw_index, statement, parameters), "passages_bm25")


def test_dense_above_the_threshold_is_the_hnsw_scan(hnsw_index: Index) -> None:
    with statements(hnsw_index) as seen:
        assert hnsw_index.search("zebra stripes", k=10, mode="dense")
    (statement, parameters), = seen
    top = plan(hnsw_index, statement, parameters)
    assert bare_top_k(top, "passages_hnsw")
    assert not [n for n in nodes(top) if n["Node Type"] == "Seq Scan"]


def test_hybrid_takes_each_side_from_its_index(hnsw_index: Index) -> None:
    with statements(hnsw_index) as seen:
        assert hnsw_index.search("zebra stripes", k=10, mode="hybrid")
    (statement, parameters), = seen
    top = plan(hnsw_index, statement, parameters)
    assert bare_top_k(cte(top, "lt"), "passages_bm25")
    assert bare_top_k(cte(top, "dn"), "passages_hnsw")
    # The candidates' rows, and their BM25 fields (passages_lexical), fetched by key, never by reading a table through.
    assert not [n for n in nodes(top) if n["Node Type"] == "Seq Scan"
                and n.get("Relation Name") in ("passages", "passages_lexical")]
