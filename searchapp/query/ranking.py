"""One query's ranking, stage by stage: the one function a search serves (``query/engine.py``) and an evaluation
scores (``evaluate/runner.py``, its diagnostics and ``tune``), over the same evidence the stores gathered.

Stages, in order, each reading its own settings (the fields of :class:`~searchapp.query.fusion.Fusion`):

1. **the mode's ranking** of what was gathered (:class:`Gathered`): BM25 alone, the cosine alone, or hybrid, the
   candidates fused (``query/fusion.py``: ``method``, ``norm``, the weights);
2. **a cosine threshold** (the ``min_score`` search option; dense and hybrid);
3. **a rerank** (``rerank``, ``rerank_depth``; ``query/rerank.py``): a registered reranker re-scores the best
   ``rerank_depth`` passages from their text and they go first in its order, the others following in theirs;
4. **grouping by document** (``group_by="document"``, and the evaluation's document rankings; ``document_weight``,
   ``document_threshold``: ``query/documents.py``). After a rerank a document ranks by its best passage: the
   document weight's threshold is a fused z-score, which a reranker's scores are not.

Every stage's score of a passage is kept under the stage's name (:attr:`Ranked.scores`: ``lexical``, ``dense``,
``fused``, ``rerank``), so that a hit and its explanation carry each stage's score with no field per stage.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from searchapp.query import rerank as rerank_stage
from searchapp.query.documents import DocumentScore, group_documents, hybrid_documents
from searchapp.query.fusion import Fusion, Weighting, fuse, weighting
from searchapp.store.rows import Candidates
from searchapp.types import Run

LEXICAL, DENSE, FUSED = "lexical", "dense", "fused"  # the stages' names in a passage's scores
D = TypeVar("D", bound=Hashable)
# Passage ids -> their texts (those still stored): what a rerank stage reads.
Texts = Callable[[Sequence[int]], Mapping[int, str]]


@dataclass(frozen=True)
class Gathered:
    """What the stores gave for one query: the side a single mode ranks by, or for hybrid the candidates (both
    sides' top ``k0``, every one with both real scores). A search gathers what its mode needs; an evaluation
    gathers all three once and ranks them in every mode and setting."""

    lexical: Run | None = None  # BM25, best first
    dense: Run | None = None  # cosine, best first
    candidates: Candidates | None = None
    query: str = ""  # the query's text (else the candidates')

    @property
    def text(self) -> str:
        """The query's text, which a rerank stage reads."""
        return self.query or (self.candidates.query if self.candidates is not None else "")


@dataclass
class Ranked:
    """One query's passages ranked by every stage that ran: ``run`` best first (each passage's score that of the
    last stage that scored it), ``scores`` every stage's score of each passage it scored, by stage name, and how
    a hybrid fusion weighed the sides (with ``explain``)."""

    mode: str
    run: Run
    scores: dict[str, dict[int, float]] = field(default_factory=dict)
    weighting: Weighting | None = None
    fusion: str = ""  # the fusion's settings in a few words (hybrid, with explain)
    reranked: bool = False
    complete: bool = False  # the ranking holds every passage that could rank (set by the caller that gathered)

    def stage_scores(self, pid: int) -> dict[str, float]:
        """Every stage's score of ``pid``, in stage order."""
        return {stage: s[pid] for stage, s in self.scores.items() if pid in s}


@dataclass(frozen=True)
class Ranking:
    """The stages' settings for one query (an index's defaults with the query's overrides)."""

    settings: Fusion

    def depth(self, need: int) -> int:
        """How deep to gather so that ``need`` passages are ranked as a deeper request would rank them: a rerank
        stage re-scores its ``rerank_depth`` whatever ``k`` is asked."""
        return max(need, self.settings.rerank_depth) if self.settings.rerank else need

    def passages(self, gathered: Gathered, mode: str, texts: Texts | None = None,
                 cosine_floor: float | None = None, explain: bool = False) -> Ranked:
        """``gathered`` ranked in ``mode`` by every stage; ``texts`` reads passages' texts for a rerank stage;
        ``cosine_floor`` (the search option min_score) keeps only passages whose cosine is at least that (dense
        and hybrid)."""
        ranked = self._ranked(gathered, mode, explain)
        if cosine_floor is not None:
            cosines = ranked.scores[DENSE]
            ranked.run = [(pid, score) for pid, score in ranked.run if cosines[pid] >= cosine_floor]
        if self.settings.rerank:
            self._rerank(ranked, gathered.text, texts)
        return ranked

    def _ranked(self, gathered: Gathered, mode: str, explain: bool) -> Ranked:
        if mode == LEXICAL:
            run = list(gathered.lexical or [])
            return Ranked(mode, run, {LEXICAL: dict(run)})
        if mode == DENSE:
            run = list(gathered.dense or [])
            return Ranked(mode, run, {DENSE: dict(run)})
        cands = gathered.candidates
        if cands is None:
            raise ValueError("hybrid ranking needs the gathered candidates")
        run = fuse(cands, self.settings)
        ranked = Ranked(mode, run, {DENSE: cands.dense, LEXICAL: cands.lexical, FUSED: dict(run)})
        if explain:
            ranked.weighting, ranked.fusion = weighting(cands, self.settings), self.settings.describe()
        return ranked

    def _rerank(self, ranked: Ranked, query: str, texts: Texts | None) -> None:
        if texts is None:
            raise ValueError("a rerank stage needs the passages' texts")
        head, tail = ranked.run[: self.settings.rerank_depth], ranked.run[self.settings.rerank_depth :]
        found = texts([pid for pid, _ in head])
        head = [(pid, s) for pid, s in head if pid in found]  # a passage removed since it was ranked is left out
        if not head:
            return
        scores = rerank_stage.reranker(self.settings.rerank).score(query, [found[pid] for pid, _ in head])
        if len(scores) != len(head):
            raise ValueError(f"reranker {self.settings.rerank!r} gave {len(scores)} scores for {len(head)} texts")
        order = {pid: i for i, (pid, _) in enumerate(head)}
        rescored = sorted(((pid, float(s)) for (pid, _), s in zip(head, scores, strict=True)),
                          key=lambda x: (-x[1], order[x[0]]))
        ranked.scores[rerank_stage.STAGE] = dict(rescored)
        ranked.run = rescored + tail
        ranked.reranked = True

    def documents(self, ranked: Ranked, document_of: Callable[[int], D | None]) -> list[tuple[D, DocumentScore]]:
        """``ranked``'s passages folded into documents, best first: in hybrid mode by the document rule (the
        document weight, the document both sides rank first kept first); after a rerank, or in a single mode,
        by each document's best passage."""
        if ranked.mode == LEXICAL or ranked.mode == DENSE or ranked.reranked:
            return group_documents(ranked.run, document_of)
        return hybrid_documents(ranked.run, document_of, self.settings, ranked.scores[DENSE],
                                ranked.scores[LEXICAL])
