"""Vectors in FAISS, keyed by passage id: exact inner product (``IndexIDMap2`` over ``IndexFlatIP``) for small
indexes, an inverted-file index (``IndexIVFFlat``, ids native, a hashtable direct map so vectors can be
reconstructed and removed by id) for large ones. :meth:`VectorStore.to_ivf` converts; docs/performance.md has
the recall measurements behind the parameters.

The file is written to a temporary name and renamed, so a crash never leaves a half-written index; and since
SQLite also holds every vector, a missing or stale file is rebuilt from it without running the model.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from searchapp.errors import StorageError
from searchapp.store.vector_policy import auto_nprobe


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """FAISS on one OpenMP thread for a single query: splitting one query's scan over the cores costs more in
    synchronisation than it saves, several times more when another process keeps a core busy
    (docs/performance.md). The setting is per process; training and batch adds keep every thread."""
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def _reason(exc: BaseException) -> str:
    """The cause of a failed write in a few words: the OS's, or what FAISS puts in its message's last brackets."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    message = str(exc).strip()
    if message.endswith(")") and "(" in message:
        return message[message.rindex("(") + 1 : -1]
    return message.splitlines()[0][:200] if message else type(exc).__name__


class VectorStore:
    """Exact inner-product search over unit vectors (inner product = cosine)."""

    def __init__(self, path: Path, dimension: int, nprobe: int = 0) -> None:
        self.path = path
        self.dimension = dimension
        self.nprobe = nprobe  # 0: auto_nprobe(nlist)
        # IndexIDMap2 or IndexIVFFlat; typed Any because faiss's stubs know neither's full interface.
        self.index: Any = self._load() if path.exists() else self._empty()
        self.dirty = False
        self.stamp = self.file_stamp()
        # FAISS allows concurrent searches but not a search during an add or remove (a server's threads do both).
        self.lock = threading.RLock()

    def file_stamp(self) -> tuple[int, int] | None:
        """(mtime_ns, size) of the file on disk, to notice another process rewriting it."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return st.st_mtime_ns, st.st_size

    def _empty(self) -> Any:
        return faiss.IndexIDMap2(faiss.IndexFlatIP(self.dimension))

    def _load(self) -> Any:
        # Any unreadable, foreign or mis-sized file is treated as missing: the caller sees the count mismatch and
        # rebuilds from the vectors SQLite holds.
        try:
            index = faiss.read_index(str(self.path))
        except RuntimeError:
            return self._empty()
        if not isinstance(index, faiss.IndexIDMap2 | faiss.IndexIVFFlat) or index.d != self.dimension:
            return self._empty()
        return index

    @property
    def kind(self) -> str:
        """``flat`` (exact) or ``ivf`` (approximate)."""
        return "ivf" if isinstance(self.index, faiss.IndexIVFFlat) else "flat"

    @property
    def count(self) -> int:
        """Number of vectors held."""
        return int(self.index.ntotal)

    def ids(self) -> np.ndarray:
        """Passage ids held: int64 ``(n,)`` (insertion order for flat, list order for IVF)."""
        if self.kind == "flat":
            return faiss.vector_to_array(self.index.id_map).astype(np.int64)
        inv = self.index.invlists
        parts = [
            faiss.rev_swig_ptr(inv.get_ids(i), inv.list_size(i)).copy()
            for i in range(self.index.nlist)
            if inv.list_size(i)
        ]
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add vectors: ``ids`` int64 ``(n,)``, ``vectors`` float32 ``(n, d)``."""
        if len(ids):
            with self.lock:
                self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), ids.astype(np.int64))
                self.dirty = True

    def remove(self, ids: Iterable[int]) -> None:
        """Remove the vectors of these passage ids (absent ids are ignored)."""
        arr = np.fromiter(ids, dtype=np.int64)
        if len(arr):
            with self.lock:
                if self.kind == "flat":
                    self.index.remove_ids(faiss.IDSelectorBatch(arr))
                else:  # the hashtable direct map only accepts an array selector
                    self.index.remove_ids(faiss.IDSelectorArray(len(arr), faiss.swig_ptr(arr)))
                self.dirty = True

    def search(self, query: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The ``k`` nearest passages to ``query`` (float32 ``(d,)``): ``[(passage_id, cosine)]``, best first.

        ``allowed`` (int64 ``(m,)``): search only among these passage ids.
        """
        if self.count == 0 or k <= 0 or (allowed is not None and len(allowed) == 0):
            return []
        k = min(k, self.count if allowed is None else len(allowed))
        q = query.reshape(1, -1).astype(np.float32)
        with self.lock, _one_thread():
            nprobe = (self.nprobe or auto_nprobe(self.index.nlist)) if self.kind == "ivf" else 0
            hits = self._search(q, k, allowed, nprobe)
            if allowed is not None and nprobe and len(hits) < k:
                # A narrow filter can leave the probed lists short of k matches: probe them all.
                hits = self._search(q, k, allowed, self.index.nlist)
        return hits

    def _search(self, q: np.ndarray, k: int, allowed: np.ndarray | None, nprobe: int) -> list[tuple[int, float]]:
        if allowed is None:
            params = faiss.SearchParametersIVF(nprobe=nprobe) if nprobe else None
        else:
            sel = faiss.IDSelectorBatch(np.ascontiguousarray(allowed, dtype=np.int64))
            params = faiss.SearchParametersIVF(sel=sel, nprobe=nprobe) if nprobe else faiss.SearchParameters(sel=sel)
        scores, ids = self.index.search(q, k, params=params)
        # FAISS orders exact ties (duplicate passages) arbitrarily; every run in the product breaks them by id.
        hits = [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]
        return sorted(hits, key=lambda x: (-x[1], x[0]))

    def scores(self, query: np.ndarray, ids: Iterable[int]) -> dict[int, float]:
        """Cosine of ``query`` (float32 ``(d,)``) with the stored vectors of ``ids`` (ids not held are left out):
        one batch of vectors and one product, or one id at a time where an id is not held."""
        wanted = [int(pid) for pid in ids]
        if not wanted:
            return {}
        # One batch: a hybrid query asks for about 100 on its critical path, a third of the time of a FAISS call
        # per id at 1M (docs/performance.md, "The lexical candidates' cosines"); on one thread, as a search.
        with self.lock, _one_thread():
            try:
                vecs = self.index.reconstruct_batch(np.asarray(wanted, dtype=np.int64))  # float32 (n, d)
            except RuntimeError:  # an id not in the map: FAISS refuses the whole batch
                return self._scores_each(query, wanted)
        return dict(zip(wanted, (vecs @ query).tolist(), strict=True))

    def _scores_each(self, query: np.ndarray, ids: list[int]) -> dict[int, float]:
        """:meth:`scores` one id at a time, leaving out the ids not held."""
        out: dict[int, float] = {}
        with self.lock:
            for pid in ids:
                try:
                    vec = self.index.reconstruct(pid)
                except RuntimeError:
                    continue
                out[pid] = float(np.dot(vec, query))
        return out

    def save(self) -> None:
        """Write the index atomically (temporary file, fsync, rename)."""
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        try:
            with self.lock:
                faiss.write_index(self.index, str(tmp))
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except (OSError, RuntimeError) as exc:  # FAISS reports a failed write (ENOSPC) as RuntimeError
            # The previous file is whole and still in place; the partial copy would only hold on to disk space.
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise StorageError(f"{self.path}: cannot write the vector file: {_reason(exc)}") from exc
        self.dirty = False
        self.stamp = self.file_stamp()

    def vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """Everything held: ids int64 ``(n,)`` and vectors float32 ``(n, d)``, row i for id i."""
        ids = self.ids()
        if self.kind == "flat":
            return ids, self.index.index.reconstruct_n(0, self.count)
        return ids, np.vstack([self.index.reconstruct(int(i)) for i in ids]) if len(ids) else np.zeros(
            (0, self.dimension), dtype=np.float32
        )

    def to_ivf(self, nlist: int, train_size: int = 100_000, seed: int = 0) -> None:
        """Replace the index with an IVF one of ``nlist`` lists, trained on a sample of the vectors held."""
        ids, vecs = self.vectors()
        self.build_ivf(lambda: [(ids, vecs)], len(ids), nlist, train_size, seed)

    def build_ivf(
        self,
        batches: Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]],
        n: int,
        nlist: int,
        train_size: int = 100_000,
        seed: int = 0,
    ) -> None:
        """Replace the contents with an IVF index of ``nlist`` lists over ``n`` vectors that ``batches()`` yields
        as ``(ids int64 (m,), vectors float32 (m, d))``, read twice: once for a training sample, once to add.

        Streaming keeps the peak at one copy of the vectors (plus a batch), where converting a full exact index
        would hold two. Too few vectors to train ``nlist`` lists: the index is rebuilt exact instead.
        """
        if n < nlist:
            self.rebuild(batches())
            return
        rng = np.random.default_rng(seed)
        # k-means wants about 40 points per list (FAISS warns below 39): more lists, a bigger sample.
        chosen = np.sort(rng.choice(n, size=min(max(train_size, 40 * nlist), n), replace=False))
        sample, seen = [], 0
        for _, vecs in batches():
            lo, hi = np.searchsorted(chosen, [seen, seen + len(vecs)])
            sample.append(vecs[chosen[lo:hi] - seen])
            seen += len(vecs)
        ivf = faiss.IndexIVFFlat(faiss.IndexFlatIP(self.dimension), self.dimension, nlist, faiss.METRIC_INNER_PRODUCT)
        # Only a small index (an ivf_threshold set low) has fewer than 40 points per list; FAISS would print a
        # warning on every such training, to the user's terminal.
        ivf.cp.min_points_per_centroid = 5
        ivf.train(np.ascontiguousarray(np.concatenate(sample)))
        del sample
        ivf.set_direct_map_type(faiss.DirectMap.Hashtable)  # type: ignore[attr-defined]
        for ids, vecs in batches():
            ivf.add_with_ids(np.ascontiguousarray(vecs, dtype=np.float32), ids.astype(np.int64))
        with self.lock:
            self.index = ivf
            self.dirty = True

    def to_flat(self) -> None:
        """Replace an IVF index with an exact one holding the same vectors."""
        ids, vecs = self.vectors()
        self.rebuild([(ids, vecs)])

    def rebuild(self, batches: Iterable[tuple[np.ndarray, np.ndarray]]) -> None:
        """Replace the contents with an exact index of ``(ids int64 (n,), vectors float32 (n, d))`` batches."""
        flat = self._empty()
        for ids, vectors in batches:
            if len(ids):
                flat.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), ids.astype(np.int64))
        with self.lock:
            self.index = flat
            self.dirty = True
