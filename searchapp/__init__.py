"""searchapp: semantic search over your documents with BERT-layer embeddings, BM25 and hybrid ranking.

Public API::

    from searchapp import Index
    hits = Index(".searchapp").search("how are passages split?", k=5)
"""

from __future__ import annotations

from searchapp.config import IndexConfig
from searchapp.encode.embedder import Encoder
from searchapp.errors import (
    ConfigError,
    DeviceError,
    DocumentNotFoundError,
    EncoderMismatchError,
    IndexLockedError,
    IndexNotFoundError,
    LoadError,
    ModelLoadError,
    ReadOnlyError,
    SchemaError,
    SearchappError,
)
from searchapp.filters import Filter
from searchapp.index import Index
from searchapp.ingest.options import IngestOptions
from searchapp.ingest.summary import IngestSummary
from searchapp.reports import CollectionListing, IndexStats
from searchapp.types import Document, DocumentText, ExportedDocument, ExportedPassage, Hit, PassageContext, Span

__version__ = "0.1.0"

__all__ = [
    "CollectionListing",
    "ConfigError",
    "DeviceError",
    "Document",
    "DocumentNotFoundError",
    "DocumentText",
    "Encoder",
    "EncoderMismatchError",
    "ExportedDocument",
    "ExportedPassage",
    "Filter",
    "Hit",
    "Index",
    "IndexConfig",
    "IndexLockedError",
    "IndexNotFoundError",
    "IndexStats",
    "IngestOptions",
    "IngestSummary",
    "LoadError",
    "ModelLoadError",
    "PassageContext",
    "ReadOnlyError",
    "SchemaError",
    "SearchappError",
    "Span",
    "__version__",
]
