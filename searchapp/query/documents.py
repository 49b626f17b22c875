"""A document's score from its passages' scores, for rankings grouped by document (``group_by="document"``,
and the document-level evaluation of ``searchapp eval``).

A document ranks by its best passage, plus, in hybrid mode, ``document_weight`` times how far each of its next
best passages (up to :data:`DOCUMENT_PASSAGES` in all) scores above ``document_threshold``: a page that answers
a question in several places outranks a page (an API stub, a changelog line) that matches it once about as well.
Hybrid scores are fused z-scores by default (``query/fusion.py``), so the threshold is in standard deviations
above the candidates' mean: a passage that is merely on the page's topic adds nothing.

One rule bounds it: a document whose passage is first in both single lists (the best cosine and the best BM25
among the candidates) stays first. Both sides agree on it, and the fusion of passages always keeps such a passage
first; the weight of further passages must not undo that. Measured on both visible documentation folders and the
visible BEIR splits in docs/evaluation.md ("Known-item ranking on two documentation folders").
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from searchapp.types import Run

DOCUMENT_PASSAGES = 3  # the passages of a document that count: its best and the next two
# What names a document: its path (the evaluation) or its id (a grouped search); any key that tells documents apart.
D = TypeVar("D", bound=Hashable)


class DocumentWeights(Protocol):
    """The settings the rule reads (``Fusion`` has them)."""

    @property
    def document_weight(self) -> float: ...

    @property
    def document_threshold(self) -> float: ...


@dataclass
class DocumentScore:
    """One document of a grouped ranking: its best passage, its score, and its other ranked passages (best first)."""

    best: int
    score: float
    others: list[int] = field(default_factory=list)


def agreed_first(
    dense: Mapping[int, float], lexical: Mapping[int, float], document_of: Callable[[int], D | None]
) -> D | None:
    """The document of the passage both sides rank first (highest cosine and highest BM25 among the same
    candidates, ties by passage id), or of both sides' first passages where those share a document; else None."""
    if not dense or not lexical:
        return None
    first_dense = document_of(min(dense, key=lambda pid: (-dense[pid], pid)))
    first_lexical = document_of(min(lexical, key=lambda pid: (-lexical[pid], pid)))
    return first_dense if first_dense is not None and first_dense == first_lexical else None


def group_documents(
    run: Run, document_of: Callable[[int], D | None], weight: float = 0.0, threshold: float = 0.0,
    first: D | None = None,
) -> list[tuple[D, DocumentScore]]:
    """Fold a passage ``run`` (best first) into documents, best first (ties in the order their best passages
    came; with ``weight`` 0, that order). ``document_of`` names a passage's document (``None``: leave the passage
    out). ``weight`` 0 ranks a document by its best passage alone. ``first`` (:func:`agreed_first`), when ranked,
    is put first, its score raised to the leader's where the weight of further passages put another above it."""
    docs: dict[D, DocumentScore] = {}
    for pid, score in run:
        doc = document_of(pid)
        if doc is None:
            continue
        found = docs.get(doc)
        if found is None:
            docs[doc] = DocumentScore(pid, score)
            continue
        found.others.append(pid)
        if weight and len(found.others) < DOCUMENT_PASSAGES:
            found.score += weight * max(0.0, score - threshold)
    if not weight:
        # By the best passage: the order the best passages came in, which is the order of their scores in a run
        # sorted by score, and the rerank stage's order in a reranked run (query/ranking.py), whose passages past
        # the reranked ones keep their earlier scores.
        ranked = list(docs.items())
    else:
        order = {doc: i for i, doc in enumerate(docs)}
        ranked = sorted(docs.items(), key=lambda item: (-item[1].score, order[item[0]]))
    if first in docs and ranked[0][0] != first:
        docs[first].score = max(docs[first].score, ranked[0][1].score)
        ranked = [(first, docs[first])] + [item for item in ranked if item[0] != first]
    return ranked


def hybrid_documents(
    run: Run, document_of: Callable[[int], D | None], settings: DocumentWeights, dense: Mapping[int, float],
    lexical: Mapping[int, float],
) -> list[tuple[D, DocumentScore]]:
    """A hybrid ``run`` folded into documents by the whole rule: ``settings``' document weight and threshold, and
    the document both sides rank first (``dense`` and ``lexical``: the candidates' cosines and BM25 scores) kept
    first. What a grouped hybrid search and the document-level evaluation both rank by."""
    return group_documents(run, document_of, settings.document_weight, settings.document_threshold,
                           agreed_first(dense, lexical, document_of))
