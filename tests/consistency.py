"""Checks shared by the crash and disk-full tests: the three stores of an index agree."""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import Connection, text

from searchapp import Index
from searchapp.types import ExportedPassage


def check_lexical(stores: Any, conn: Connection) -> None:
    """The lexical index agrees with the passages; raises if they differ. FTS5 compares its inverted index with
    the passages it indexes; tantivy's (made ready, so caught up if it was behind) holds exactly their ids."""
    if stores.lexical_index.name == "fts5":
        conn.execute(text("INSERT INTO passages_fts(passages_fts, rank) VALUES('integrity-check', 1)"))
        return
    import tantivy

    stores.lexical_ready()
    stores.lexical_index._index.reload()
    searcher = stores.lexical_index._index.searcher()
    hits = searcher.search(tantivy.Query.all_query(), max(searcher.num_docs, 1)).hits
    held = sorted(int(i) for i in searcher.fast_field_values("id", [a for _, a in hits]))
    stored = sorted(int(r[0]) for r in conn.execute(text("SELECT id FROM passages")))
    assert held == stored, "the lexical index and the passages differ"


def assert_vectors_match_database(ix: Index) -> None:
    """FAISS (as opened, so rebuilt if stale) holds exactly the passages SQLite holds, each with its vector."""
    ids, vecs = ix.stores.vectors.vectors()
    stored: dict[int, np.ndarray] = {}
    for batch_ids, batch in ix.stores.stored_vectors(ix.config.dimension):
        stored.update(zip(batch_ids.tolist(), batch, strict=True))
    assert sorted(ids.tolist()) == sorted(stored), "FAISS and SQLite hold different passages"
    for pid, vec in zip(ids.tolist(), vecs, strict=True):
        np.testing.assert_array_equal(vec, stored[pid])
    assert_passage_counts(ix)


def assert_passage_counts(ix: Index) -> None:
    """Each document's recorded passage count (the listings read it) is the passages it holds."""
    held: dict[str, int] = {}
    for row in ix.export():
        if isinstance(row, ExportedPassage):
            held[row.path] = held.get(row.path, 0) + 1
    recorded = {key: doc.n_passages for key, doc in ix.stores.documents().items()}
    assert recorded == {key: held.get(key, 0) for key in recorded}, "a document's passage count is not its passages"
