"""``searchapp eval``: index a BEIR-layout corpus (cached), run a split's queries, score each mode.

Documents are title + text; a document's score is its best passage's (the first time it appears in a passage
ranking). Candidates for hybrid ranking are gathered once per query, so every fusion setting (for ``--mode
all`` or ``tune``) is scored on the same candidates.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from searchapp.config import IndexConfig
from searchapp.encode.split_zip import cache_root
from searchapp.errors import SearchappError
from searchapp.evaluate.beir import BeirSet, load_beir
from searchapp.evaluate.metrics import evaluate
from searchapp.index import Index
from searchapp.query.engine import Candidates, fuse, gather
from searchapp.query.fusion import Fusion, Run
from searchapp.store import lexical

DEPTH = 100  # documents ranked per query (Recall@100, MAP@100)
PASSAGE_DEPTH = 300  # passages fetched for a single-side run before folding them into documents


@dataclass(frozen=True)
class QueryRuns:
    """Everything needed to rank one query's documents in any mode: both single runs and the candidates."""

    lexical: Run
    dense: Run
    candidates: Candidates


@dataclass
class Prepared:
    """A benchmark split with its index and every query's runs."""

    data: BeirSet
    index: Index
    doc_of: dict[int, str]
    runs: dict[str, QueryRuns]
    k0: int  # candidates per side the runs were gathered with

    @property
    def judged(self) -> int:
        """Queries with at least one relevant document (the others are skipped by the metrics)."""
        return sum(1 for rels in self.data.qrels.values() if any(g > 0 for g in rels.values()))

    def documents(self, passage_run: Run) -> list[str]:
        """Fold a passage run into a document ranking (max over a document's passages), ``DEPTH`` long."""
        seen: dict[str, None] = {}
        for pid, _ in passage_run:
            doc = self.doc_of.get(pid)
            if doc is not None and doc not in seen:
                seen[doc] = None
                if len(seen) == DEPTH:
                    break
        return list(seen)

    def score(self, mode: str, fusion: Fusion | None = None) -> dict[str, float]:
        """Mean metrics of ``mode`` (``lexical``, ``dense``, or ``hybrid`` with ``fusion``)."""
        ranked: dict[str, list[str]] = {}
        for q, r in self.runs.items():
            if mode == "lexical":
                ranked[q] = self.documents(r.lexical)
            elif mode == "dense":
                ranked[q] = self.documents(r.dense)
            else:
                ranked[q] = self.documents(fuse(r.candidates, fusion or self.index.config.fusion_settings))
        return evaluate(ranked, self.data.qrels)[0]

    def run_for(self, mode: str, fusion: Fusion | None = None) -> dict[str, list[str]]:
        """Document rankings of every query (for TREC run files)."""
        out = {}
        for q, r in self.runs.items():
            base = r.lexical if mode == "lexical" else r.dense if mode == "dense" else fuse(
                r.candidates, fusion or self.index.config.fusion_settings
            )
            out[q] = self.documents(base)
        return out


def index_path(folder: Path, config: IndexConfig) -> Path:
    """Cache folder of the index for this corpus and encoder/splitter settings."""
    from searchapp.encode.precision import resolve

    fields = {"corpus": str(folder.resolve()), "model": config.model, "pooling": config.pooling,
              "params": config.pooling_params, "max_tokens": config.max_tokens, "overlap": config.overlap}
    precision = resolve(config.precision)
    if precision != "fp32":  # fp32 keys stay as they were before precision was a setting
        fields["precision"] = precision
    key = json.dumps(fields, sort_keys=True)
    return cache_root() / "eval" / f"{folder.name}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def prepare(
    folder: Path,
    split: str,
    config: IndexConfig,
    k0: int | None = None,
    index_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> Prepared:
    """Load the split, build or reuse the corpus index, and gather every judged query's runs."""
    data = load_beir(folder, split)
    path = index_dir or index_path(folder, config)
    index = Index.open_or_create(
        path, model=config.model, pooling=config.pooling, pooling_params=config.pooling_params,
        max_tokens=config.max_tokens, overlap=config.overlap, precision=config.precision,
    )
    if index_dir is None:
        # A cache index always evaluates this version's hybrid defaults; an index named with --index keeps its own
        # (for example a tuned one).
        index.set_fusion(IndexConfig().fusion_settings)
    if index.stats().documents != len(data.corpus):
        if progress:
            progress(f"indexing {len(data.corpus)} documents of {folder.name} into {path}")
        index.ingest_records((d, t, data.document_text(d)) for d, (t, _) in data.corpus.items())
    doc_of = index.meta.passage_documents()
    k0 = k0 or index.config.k0
    qids = [q for q in data.queries if q in data.qrels]
    texts = [data.queries[q] for q in qids]
    vecs = index.encoder.encode(texts, truncate=True)
    runs: dict[str, QueryRuns] = {}
    with index.meta.connect() as conn:
        for q, text, vec in zip(qids, texts, vecs, strict=True):
            runs[q] = QueryRuns(
                lexical=lexical.search(conn, text, PASSAGE_DEPTH),
                dense=index.vectors.search(vec, PASSAGE_DEPTH),
                candidates=gather(index, conn, text, vec, k0),
            )
    return Prepared(data, index, doc_of, runs, k0)


def write_trec_run(path: Path, run: dict[str, list[str]], tag: str) -> None:
    """A TREC run file: ``qid Q0 docid rank score tag``, score decreasing with rank."""
    try:
        with path.open("w", encoding="utf-8") as fh:
            for q, docs in run.items():
                for i, d in enumerate(docs):
                    fh.write(f"{q} Q0 {d} {i + 1} {len(docs) - i} {tag}\n")
    except OSError as exc:
        raise SearchappError(f"{path}: cannot write run file: {exc.strerror or exc}") from exc


def modes_for(mode: str) -> Sequence[str]:
    """``all`` expands to every mode."""
    return ("lexical", "dense", "hybrid") if mode == "all" else (mode,)
