"""What an index reports of itself: :class:`IndexStats` (``searchapp status``), :class:`DocumentListing`
(``searchapp documents``) and :class:`CollectionListing` (``searchapp collections``), with their stable JSON forms
(docs/cli.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from searchapp.collection import descriptions, of_metadata
from searchapp.config import IndexConfig
from searchapp.encode.provenance import Provenance
from searchapp.filters import Filter
from searchapp.setting import whole
from searchapp.store.base import Stores

# What ``status`` shows of the settings, under their flat names (docs/cli.md).
_STATUS_SETTINGS = ("model", "pooling", "pooling_params", "dimension", "max_tokens", "passage_context", "fusion",
                    "norm", "alpha", "k0")
# ... and of the vector index's rule: approximate (IVF in a folder, HNSW in PostgreSQL) from this many vectors.
_STATUS_RULE = ("ivf_threshold",)


@dataclass(frozen=True)
class IndexStats:
    """What ``searchapp status`` reports: counts, the settings the index was built with, its vector index kind
    and size on disk."""

    path: str
    documents: int
    passages: int
    config: IndexConfig
    vector_index: str
    disk_bytes: int
    backend: str = "folder"
    vectors_precision: tuple[str, ...] = ()  # what the stored vectors were embedded in (empty: not recorded)
    facts: Mapping[str, object] = field(default_factory=dict)  # the backend's own (store/base.Stores.facts)
    vectors_device: tuple[str, ...] = ()  # the device classes they were embedded on (empty: not recorded)
    vectors_encoder: tuple[str, ...] = ()  # the encoder backends that embedded them (empty: not recorded)
    collections: tuple[str, ...] = ()  # the named collections it holds, by name

    def to_dict(self) -> dict[str, object]:
        """The stable JSON form documented in docs/cli.md."""
        flat = self.config.to_flat()
        return {
            "path": self.path, "documents": self.documents, "passages": self.passages,
            "collections": list(self.collections), **{name: flat[name] for name in _STATUS_SETTINGS},
            "vector_index": self.vector_index, **{name: flat[name] for name in _STATUS_RULE},
            "disk_bytes": self.disk_bytes, "backend": self.backend,
            "vectors_precision": "+".join(self.vectors_precision) or None,
            "vectors_device": "+".join(self.vectors_device) or None,
            "vectors_encoder": "+".join(self.vectors_encoder) or None, **self.facts,
        }


@dataclass(frozen=True)
class DocumentListing:
    """One indexed document as ``searchapp documents`` lists it: its path (or text id), source, title, number of
    passages, size in bytes (of the file, or of the text in UTF-8) and the file's modification time when it was
    indexed (0 for texts), and when the document was indexed: Unix seconds (UTC) when its row was last written
    (added, or its content replaced; a metadata-only change or a new mtime keeps it), ``None`` for a document
    indexed before searchapp recorded it."""

    path: str
    source: str
    title: str
    passages: int
    size: int
    mtime: float
    indexed_at: float | None = None
    collection: str | None = None  # the named collection it is in, if any

    def to_dict(self) -> dict[str, object]:
        """The stable JSON form documented in docs/cli.md."""
        return {"path": self.path, "source": self.source, "title": self.title, "passages": self.passages,
                "size": self.size, "mtime": self.mtime, "indexed_at": self.indexed_at, "collection": self.collection}


def index_stats(stores: Stores, config: IndexConfig, path: str) -> IndexStats:
    """What ``searchapp status`` shows of the index in ``stores``, built with ``config``, shown as ``path``."""
    docs, passages = stores.counts()
    made = Provenance.from_settings(stores.settings())
    return IndexStats(
        path=path, documents=docs, passages=passages, config=config, vector_index=stores.vector_kind(),
        disk_bytes=stores.disk_bytes(), backend=stores.backend, vectors_precision=made.precision,
        vectors_device=made.device, vectors_encoder=made.encoder, facts=stores.facts(),
        collections=tuple(sorted(stores.collection_counts())),
    )


def document_listing(stores: Stores, offset: int = 0, limit: int | None = None,
                     collection: str | None = None) -> list[DocumentListing]:
    """The documents in ``stores`` with their passage counts, by path (or text id): from the ``offset``-th, at most
    ``limit`` (all without), of ``collection`` only where one is named (one it does not hold: ``ConfigError``
    listing those it holds)."""
    whole("offset", offset)
    if limit is not None:
        whole("limit", limit, ge=1)
    if collection is not None:
        stores.check_held(Filter(collection=collection))
    return [
        DocumentListing(path=doc.path, source=doc.source, title=doc.title, passages=doc.n_passages, size=doc.size,
                        mtime=doc.mtime, indexed_at=doc.indexed_at, collection=of_metadata(json.loads(doc.metadata)))
        for doc in stores.document_page(offset, limit, collection)
    ]


@dataclass(frozen=True)
class CollectionListing:
    """One named collection as ``searchapp collections`` lists it: its name, its description (``""`` where none
    was given) and how many documents and passages it holds."""

    name: str
    description: str
    documents: int
    passages: int

    def to_dict(self) -> dict[str, object]:
        """The stable JSON form documented in docs/cli.md."""
        return {"name": self.name, "description": self.description, "documents": self.documents,
                "passages": self.passages}


def collection_listing(stores: Stores) -> list[CollectionListing]:
    """Every collection that holds a document in ``stores``, by name, with its description and counts (a
    described collection whose documents are all gone is not listed)."""
    counts = stores.collection_counts()
    described = descriptions(stores.settings())
    return [CollectionListing(name, described.get(name, ""), *counts[name]) for name in sorted(counts)]
