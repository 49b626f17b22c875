"""Vectors in FAISS, keyed by passage id (``IndexIDMap2`` over exact inner product).

The file is written to a temporary name and renamed, so a crash never leaves a half-written index; and since
SQLite also holds every vector, a missing or stale file is rebuilt from it without running the model.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import faiss
import numpy as np


class VectorStore:
    """Exact inner-product search over unit vectors (inner product = cosine)."""

    def __init__(self, path: Path, dimension: int) -> None:
        self.path = path
        self.dimension = dimension
        self.index = self._load() if path.exists() else self._empty()
        self.dirty = False
        self.stamp = self.file_stamp()

    def file_stamp(self) -> tuple[int, int] | None:
        """(mtime_ns, size) of the file on disk, to notice another process rewriting it."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return st.st_mtime_ns, st.st_size

    def _empty(self) -> faiss.IndexIDMap2:
        return faiss.IndexIDMap2(faiss.IndexFlatIP(self.dimension))

    def _load(self) -> faiss.IndexIDMap2:
        # Any unreadable, foreign or mis-sized file is treated as missing: the caller sees the count mismatch and
        # rebuilds from the vectors SQLite holds.
        try:
            index = faiss.read_index(str(self.path))
        except RuntimeError:
            return self._empty()
        if not isinstance(index, faiss.IndexIDMap2) or index.d != self.dimension:
            return self._empty()
        return index

    @property
    def count(self) -> int:
        """Number of vectors held."""
        return int(self.index.ntotal)

    def ids(self) -> np.ndarray:
        """Passage ids held: int64 ``(n,)``, in insertion order."""
        return faiss.vector_to_array(self.index.id_map).astype(np.int64)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add vectors: ``ids`` int64 ``(n,)``, ``vectors`` float32 ``(n, d)``."""
        if len(ids):
            self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), ids.astype(np.int64))
            self.dirty = True

    def remove(self, ids: Iterable[int]) -> None:
        """Remove the vectors of these passage ids (absent ids are ignored)."""
        arr = np.fromiter(ids, dtype=np.int64)
        if len(arr):
            self.index.remove_ids(faiss.IDSelectorBatch(arr))
            self.dirty = True

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest passages to ``query`` (float32 ``(d,)``): ``[(passage_id, cosine)]``, best first."""
        if self.count == 0 or k <= 0:
            return []
        scores, ids = self.index.search(query.reshape(1, -1).astype(np.float32), min(k, self.count))
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]

    def scores(self, query: np.ndarray, ids: Iterable[int]) -> dict[int, float]:
        """Cosine of ``query`` (float32 ``(d,)``) with the stored vectors of ``ids`` (ids not held are left out)."""
        out: dict[int, float] = {}
        for pid in ids:
            try:
                vec = self.index.reconstruct(int(pid))
            except RuntimeError:  # id not in the map
                continue
            out[pid] = float(np.dot(vec, query))
        return out

    def save(self) -> None:
        """Write the index atomically (temporary file, fsync, rename)."""
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        faiss.write_index(self.index, str(tmp))
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        self.dirty = False
        self.stamp = self.file_stamp()

    def rebuild(self, batches: Iterable[tuple[np.ndarray, np.ndarray]]) -> None:
        """Replace the contents with ``(ids int64 (n,), vectors float32 (n, d))`` batches."""
        self.index = self._empty()
        for ids, vectors in batches:
            self.add(ids, vectors)
        self.dirty = True
