"""``searchapp eval``: a split's queries (or a folder's known-item questions) run against its corpus's index,
scored in each mode.

Documents are title + text. Every query's runs are gathered once (both single runs and the hybrid candidates),
and ranked in each mode and setting by the one ranking pipeline a search runs (``query/ranking.py``), so every
fusion setting (for ``--mode all`` or ``tune``) is scored on the same candidates, as a search would rank them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from searchapp.config import IndexConfig
from searchapp.errors import SearchappError
from searchapp.evaluate.metrics import evaluate, known_item, per_query
from searchapp.paths import cache_root
from searchapp.query.fusion import Fusion
from searchapp.query.options import MODES
from searchapp.query.ranking import DENSE, LEXICAL, Gathered, Ranked, Ranking, Texts
from searchapp.store.base import Stores
from searchapp.store.rows import Candidates
from searchapp.types import EncoderLike, Run

DEPTH = 100  # documents ranked per query (Recall@100, MAP@100)
PASSAGE_DEPTH = 300  # passages fetched for a single-side run before folding them into documents


class Labelled(Protocol):
    """Queries with their relevant documents: a benchmark split (``beir.BeirSet``) or a folder's questions
    (``known_items.KnownItems``)."""

    @property
    def queries(self) -> Mapping[str, str]: ...  # id -> text

    @property
    def qrels(self) -> Mapping[str, Mapping[str, int]]: ...  # id -> {document: grade}


# One query's runs in every mode: what the stores gave (both single runs and the hybrid candidates), ranked by the
# one ranking pipeline in any mode and setting.
QueryRuns = Gathered


@dataclass
class Prepared:
    """A benchmark split (or a folder's questions) with its index and every query's runs."""

    data: Labelled
    fusion: Fusion  # the index's hybrid default
    doc_of: dict[int, str]
    runs: dict[str, Gathered]
    k0: int  # candidates per side the runs were gathered with
    texts: Texts | None = None  # passages' texts, for a rerank stage (read from the index when asked)

    @property
    def judged(self) -> int:
        """Queries with at least one relevant document (the others are skipped by the metrics)."""
        return sum(1 for rels in self.data.qrels.values() if any(g > 0 for g in rels.values()))

    def ranked(self, query: str, mode: str, fusion: Fusion | None = None, explain: bool = False) -> Ranked:
        """Query ``query``'s passages ranked in ``mode`` (``fusion``: the settings, else the index's), as a search
        ranks them (``query/ranking.py``)."""
        return Ranking(fusion or self.fusion).passages(self.runs[query], mode, self.texts, explain=explain)

    def ranked_documents(self, ranked: Ranked, fusion: Fusion | None = None) -> list[str]:
        """``ranked`` folded into documents, ``DEPTH`` long, as a search grouped by document folds it."""
        docs = Ranking(fusion or self.fusion).documents(ranked, self.doc_of.get)
        return [doc for doc, _ in docs[:DEPTH]]

    def documents(self, passage_run: Run, fusion: Fusion | None = None, cands: Candidates | None = None) -> list[str]:
        """Fold a passage run into a document ranking, ``DEPTH`` long: by the best passage; a hybrid run
        (``fusion`` and its ``cands`` given) by the hybrid document rule (the studies' candidate rankings)."""
        if fusion is None or cands is None:
            ranked = Ranked("dense", passage_run)
        else:
            ranked = Ranked("hybrid", passage_run, {DENSE: cands.dense, LEXICAL: cands.lexical})
        return self.ranked_documents(ranked, fusion)

    def score(self, mode: str, fusion: Fusion | None = None) -> dict[str, float]:
        """Mean metrics of ``mode`` (``lexical``, ``dense``, or ``hybrid`` with ``fusion``)."""
        return evaluate(self.run_for(mode, fusion), self.data.qrels)[0]

    def known_items(self, mode: str, fusion: Fusion | None = None) -> dict[str, float | int]:
        """success@1, success@5, MRR@10 of ``mode`` and the counts behind them (``metrics.known_item``)."""
        return known_item(self.run_for(mode, fusion), self.data.qrels)

    def per_query(self, mode: str, fusion: Fusion | None = None, metric: str = "ndcg@10") -> dict[str, float]:
        """``metric`` of every judged query in ``mode`` (for paired comparisons)."""
        return per_query(self.run_for(mode, fusion), self.data.qrels, metric)

    def run_for(self, mode: str, fusion: Fusion | None = None) -> dict[str, list[str]]:
        """Document rankings of every query (for TREC run files), each ranked by the one ranking pipeline."""
        settings = fusion or self.fusion
        return {q: self.ranked_documents(self.ranked(q, mode, settings), settings) for q in self.runs}


def index_path(folder: Path, config: IndexConfig, kind: str = "beir", device: str = "cpu") -> Path:
    """Cache folder of the index for this corpus (``kind``: ``beir``, a BEIR-layout set, or ``folder``, a folder
    of documents ingested as ``searchapp ingest`` would), encoder/splitter settings, the device class embedded
    on (``device``: ``cpu`` or ``cuda[:N]``) and the family of the backend embedding the passages (a torch bf16
    cache is never reused for OpenVINO's bf16, nor the other way)."""
    from searchapp.encode.precision import resolve
    from searchapp.encode.spec import EncoderSpec

    fields = {"corpus": str(folder.resolve()), "model": config.model, "pooling": config.pooling,
              "params": config.pooling_params, "max_tokens": config.splitter.max_tokens,
              "overlap": config.splitter.overlap}
    precision = resolve(config.precision, device)
    if precision != "fp32":  # fp32 keys stay as they were before precision was a setting
        fields["precision"] = precision
    if device != "cpu":  # CPU keys as they were before the device was a setting
        fields["device"] = device.partition(":")[0]
    family = EncoderSpec(config.model, config.pooling, config.pooling_params, config.precision,
                         device=device).ingests_with.family
    if family != "torch":  # torch's keys (and the ONNX graph's, its vectors) as they were before other backends
        fields["backend"] = family
    if kind != "beir":  # and BEIR keys as they were before folders were evaluated
        fields["kind"] = kind
        # A folder's files have headings: what the encoder sees of a passage is part of its vectors (an index of
        # an older version, embedded without its section paths, is not this version's).
        fields["passage_context"] = config.passage_context
    key = json.dumps(fields, sort_keys=True)
    return cache_root() / "eval" / f"{folder.name}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def collect(data: Labelled, stores: Stores, queries: EncoderLike, fusion: Fusion, k0: int) -> Prepared:
    """Every judged query's runs against the corpus in ``stores`` (already indexed): both single runs,
    ``PASSAGE_DEPTH`` deep, and the hybrid candidates, ``k0`` per side. ``queries`` embeds the questions: the
    index's query encoder, each question alone, as a server's questions are embedded."""
    doc_of = stores.passage_documents()
    qids = [q for q in data.queries if q in data.qrels]
    texts = [data.queries[q] for q in qids]
    # Each question alone, as a search request embeds its one question: a batch pads its texts to the longest,
    # and an fp32 vector then moves in its last bits, enough to reorder a near tie (docs/evaluation.md).
    vecs = [queries.encode([text], truncate=True)[0] for text in texts]
    runs: dict[str, Gathered] = {}
    with stores.reader() as reader:
        for q, text, vec in zip(qids, texts, vecs, strict=True):
            runs[q] = Gathered(lexical=reader.lexical(text, PASSAGE_DEPTH), dense=reader.dense(vec, PASSAGE_DEPTH),
                               candidates=reader.gather(text, vec, k0), query=text)
    return Prepared(data, fusion, doc_of, runs, k0)


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
    return MODES[::-1] if mode == "all" else (mode,)
