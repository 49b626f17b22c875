"""searchapp: semantic search over your documents with BERT-layer embeddings, BM25 and hybrid ranking.

Public API::

    from searchapp import Index
    hits = Index(".searchapp").search("how are passages split?", k=5)

The names below are imported when first used (PEP 562), so that a command that needs none of them (``searchapp
--help``, a lexical query) does not pay for the database and model libraries behind ``Index``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

__version__ = "0.2.0"

# Each public name -> the module that defines it.
_EXPORTS = {
    "CollectionListing": "searchapp.reports",
    "ConfigError": "searchapp.errors",
    "DeviceError": "searchapp.errors",
    "Document": "searchapp.types",
    "DocumentNotFoundError": "searchapp.errors",
    "DocumentText": "searchapp.types",
    "Encoder": "searchapp.encode.embedder",
    "EncoderMismatchError": "searchapp.errors",
    "ExportedDocument": "searchapp.types",
    "ExportedPassage": "searchapp.types",
    "Filter": "searchapp.filters",
    "Hit": "searchapp.types",
    "Index": "searchapp.index",
    "IndexConfig": "searchapp.config",
    "IndexLockedError": "searchapp.errors",
    "IndexNotFoundError": "searchapp.errors",
    "IndexStats": "searchapp.reports",
    "IngestOptions": "searchapp.ingest.options",
    "IngestSummary": "searchapp.ingest.summary",
    "LoadError": "searchapp.errors",
    "ModelLoadError": "searchapp.errors",
    "PassageContext": "searchapp.types",
    "ReadOnlyError": "searchapp.errors",
    "SchemaError": "searchapp.errors",
    "SearchappError": "searchapp.errors",
    "Span": "searchapp.types",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'searchapp' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])

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
