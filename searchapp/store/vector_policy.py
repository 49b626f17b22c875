"""The vector index's shape as a pure rule: exact below a size, approximate above it (inverted lists, IVF, in a
folder; HNSW in PostgreSQL), and for IVF how many lists and how many of them a query probes. Kept apart from
``vectors.py`` so that configuration and ``status`` can use it without importing FAISS."""

from __future__ import annotations

from dataclasses import dataclass, replace

from searchapp.errors import ConfigError
from searchapp.setting import MAX_C_INT, whole

VECTOR_INDEXES = ("auto", "flat", "ivf")

# From how many vectors an automatic index turns approximate when its settings name no threshold: about where each
# backend's approximate index starts to pay on this kind of machine, measured. A folder's exact FAISS scan is fast
# enough to 200,000 (docs/performance.md); PostgreSQL's exact scan reads whole rows, and HNSW answers faster from
# 10,000 passages on (docs/postgres.md, "Exact scan against HNSW by size"), so it starts at 25,000, where a build
# takes seconds.
DEFAULT_THRESHOLDS: dict[str, int] = {"folder": 200_000, "postgresql": 25_000}


def auto_nlist(n: int) -> int:
    """Inverted lists for ``n`` vectors: 4 sqrt(n), the usual rule, within [16, 65536]."""
    return int(min(max(4 * n**0.5, 16), 65536))


# Lists a query probes: at least PROBES, and PROBE_SHARE of them where that is more. Chosen by recall@10 against
# exact search on real embeddings (benchmarks/ann_recall.py; docs/performance.md, "Vector index"): 64 probes gave
# 0.977 at 52k real vectors (913 lists) and 0.982 at 1M vectors grown around them (4,000 lists, where 64 is 1.6%);
# 32 gave 0.949 and 0.958. Past 4,000 lists the share measured at 1M holds. (The earlier rule, 7% of the lists,
# probed 280 of 4,000 at 1M for 0.998, at four times the search's cost.)
PROBES, PROBE_SHARE = 64, 0.016


def auto_nprobe(nlist: int) -> int:
    """Lists probed per query: :data:`PROBES`, or :data:`PROBE_SHARE` of ``nlist`` where that is more (never more
    than ``nlist``)."""
    return min(nlist, max(PROBES, round(nlist * PROBE_SHARE)))


@dataclass(frozen=True)
class VectorPolicy:
    """``kind`` (the ``vector_index`` setting): ``flat`` (always exact), ``ivf`` (always approximate: IVF in a
    folder, HNSW in PostgreSQL) or ``auto`` (exact below ``ivf_threshold`` vectors; ``None``: the backend's
    :data:`DEFAULT_THRESHOLDS` entry, filled in by :meth:`for_backend`); ``nprobe`` 0 means :func:`auto_nprobe`."""

    kind: str = "auto"
    ivf_threshold: int | None = None
    nprobe: int = 0

    def __post_init__(self) -> None:
        if self.kind not in VECTOR_INDEXES:
            raise ConfigError(f"unknown vector index '{self.kind}': use one of {', '.join(VECTOR_INDEXES)}")
        # FAISS takes nprobe as a C int; the threshold is compared with counts.
        if self.ivf_threshold is not None:
            whole("ivf_threshold", self.ivf_threshold, ge=1)
        whole("nprobe", self.nprobe, le=MAX_C_INT)

    def for_backend(self, backend: str) -> VectorPolicy:
        """This policy with ``backend``'s default threshold where it names none."""
        if self.ivf_threshold is not None:
            return self
        return replace(self, ivf_threshold=DEFAULT_THRESHOLDS[backend])

    @property
    def threshold(self) -> int:
        """The threshold in force (a policy is resolved with :meth:`for_backend` before it is used)."""
        if self.ivf_threshold is None:
            raise ValueError("the vector policy's threshold is not resolved: call for_backend() first")
        return self.ivf_threshold

    def approximate(self, n: int) -> bool:
        """Whether ``n`` vectors call for an approximate index."""
        return self.kind == "ivf" or (self.kind == "auto" and n >= self.threshold)

    def refit(self, approximate: bool, n: int, nlist: int | None = None) -> str | None:
        """What a vector index holding ``n`` vectors, approximate or exact, should become: ``"approximate"``
        (build one), ``"retrain"`` (an IVF index of ``nlist`` lists rebuilt with more; only for an index that has
        lists), ``"exact"``, or ``None`` to stay as it is.

        An IVF index is retrained once the right number of lists has doubled (the index has grown fourfold since
        training), and an automatic one goes back to exact below half the threshold: the gap stops a size near
        the threshold from flipping back and forth.
        """
        if not approximate:
            return "approximate" if n and self.approximate(n) else None
        if self.kind == "flat" or (self.kind == "auto" and n < self.threshold // 2):
            return "exact"
        if nlist is not None and auto_nlist(n) >= 2 * nlist:
            return "retrain"
        return None
