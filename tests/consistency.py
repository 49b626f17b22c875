"""Checks shared by the crash and disk-full tests: the three stores of an index agree."""

from __future__ import annotations

import numpy as np
from sqlalchemy import Connection, text

from searchapp import Index


def check_fts(conn: Connection) -> None:
    """FTS5 compares its inverted index with the passages it indexes; raises if they differ."""
    conn.execute(text("INSERT INTO passages_fts(passages_fts, rank) VALUES('integrity-check', 1)"))


def assert_vectors_match_database(ix: Index) -> None:
    """FAISS (as opened, so rebuilt if stale) holds exactly the passages SQLite holds, each with its vector."""
    ids, vecs = ix.stores.vectors.vectors()
    stored: dict[int, np.ndarray] = {}
    for batch_ids, batch in ix.stores.stored_vectors(ix.config.dimension):
        stored.update(zip(batch_ids.tolist(), batch, strict=True))
    assert sorted(ids.tolist()) == sorted(stored), "FAISS and SQLite hold different passages"
    for pid, vec in zip(ids.tolist(), vecs, strict=True):
        np.testing.assert_array_equal(vec, stored[pid])
