"""A benchmark split made ready to score: its corpus's index opened (a cached one by default) or built, and every
judged query's runs gathered. The step of ``searchapp eval`` and ``tune`` that needs an :class:`Index`; the
scoring itself (``evaluate/``) works on what the index hands it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from searchapp.config import IndexConfig
from searchapp.evaluate.beir import load_beir
from searchapp.evaluate.runner import Prepared, collect, index_path
from searchapp.index import Index
from searchapp.query.fusion import Fusion


def prepare(
    folder: Path,
    split: str,
    config: IndexConfig,
    k0: int | None = None,
    index_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> Prepared:
    """Load the split, build or reuse the corpus index, and gather every judged query's runs."""
    data = load_beir(folder, split)
    path = index_dir or index_path(folder, config)
    with Index.open_or_create(
        path, model=config.model, pooling=config.pooling, pooling_params=config.pooling_params,
        max_tokens=config.splitter.max_tokens, overlap=config.splitter.overlap, precision=config.precision,
    ) as index:
        if index_dir is None:
            # A cache index always evaluates this version's hybrid defaults; an index named with --index keeps its
            # own (for example a tuned one).
            index.set_fusion(Fusion())
        if index.stats().documents != len(data.corpus):
            if progress:
                progress(f"indexing {len(data.corpus)} documents of {folder.name} into {path}")
            index.ingest_records((d, t, data.document_text(d)) for d, (t, _) in data.corpus.items())
        return collect(data, index.stores, index.encoder, index.config.fusion, k0 or index.config.fusion.k0)
