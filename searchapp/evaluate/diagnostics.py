"""Per-question diagnostics of a known-item check, so that a miss can be read: where each mode ranks the target
document (as :meth:`Prepared.documents` folds runs: by the best passage, hybrid's by ``query/documents.py``'s
rule), whether hybrid ranks it below
the better single list, and the evidence of both sides for the target's best passage in each mode (a mode can rank
a document by another of its passages) and for the document hybrid put first: the query terms each matches with
their IDF (the store's, ``Reader.term_idf``), BM25, the cosine, and what each side added to the fused score. The
weighting is ``query/fusion.weighting``'s, the account the query engine gives of its own fusion, not a second
one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from searchapp.evaluate.known_items import KnownItems, Question
from searchapp.evaluate.metrics import first_relevant
from searchapp.evaluate.runner import Prepared, modes_for
from searchapp.query.fusion import Fusion, Weighting
from searchapp.query.ranking import FUSED, Gathered
from searchapp.query.snippets import QueryTerms
from searchapp.store.base import Reader
from searchapp.store.rows import PassageRecord

MODES = modes_for("all")  # the order of the table's rows


@dataclass(frozen=True)
class Evidence:
    """One passage's evidence: its raw scores (``None`` where the runs hold none: a passage outside the hybrid
    candidates and that side's run), the query terms its text or section path holds with their IDF (``None``
    where the store gives none), both sides' normalised scores and their contributions (weight x normalised;
    ``None`` outside the candidates and under RRF, which fuses ranks), and its hybrid score (their sum)."""

    document: str
    passage_id: int
    section: str
    bm25: float | None
    cosine: float | None
    matched_terms: tuple[tuple[str, float | None], ...]
    lexical_normalised: float | None
    dense_normalised: float | None
    lexical_contribution: float | None
    dense_contribution: float | None
    fused: float | None

    def to_dict(self) -> dict[str, object]:
        """The JSON form documented in docs/cli.md."""
        return {"document": self.document, "passage_id": self.passage_id, "section": self.section,
                "bm25": _round(self.bm25), "cosine": _round(self.cosine),
                "matched_terms": [{"term": t, "idf": _round(w)} for t, w in self.matched_terms],
                "lexical_normalised": _round(self.lexical_normalised),
                "dense_normalised": _round(self.dense_normalised),
                "lexical_contribution": _round(self.lexical_contribution),
                "dense_contribution": _round(self.dense_contribution), "fused": _round(self.fused)}


@dataclass(frozen=True)
class Diagnosis:
    """One question: each mode's rank of its first target document (``None`` beyond the run: 100 documents, or
    the hybrid candidates), the hybrid weighting (dense weight and why) and the evidence for the targets' best
    passage in each mode (``None`` where the mode ranks no target) and for the first passage of hybrid when its
    document is not a target."""

    question: Question
    ranks: Mapping[str, int | None]
    fusion: str
    dense_weight: float | None
    reason: str
    target: Mapping[str, Evidence | None]
    hybrid_first: Evidence | None

    @property
    def hybrid_disagrees(self) -> bool:
        """Hybrid ranks the target below the better single list (or loses what one of them found)."""
        best = min((r for r in (self.ranks["lexical"], self.ranks["dense"]) if r is not None), default=None)
        return best is not None and (self.ranks["hybrid"] is None or self.ranks["hybrid"] > best)

    @property
    def worth_reading(self) -> bool:
        """Some mode misses first place, or hybrid disagrees with the better single list."""
        return any(r != 1 for r in self.ranks.values()) or self.hybrid_disagrees

    def to_dict(self) -> dict[str, object]:
        """The JSON form documented in docs/cli.md."""
        q = self.question
        return {"line": q.line, "question": q.text, "targets": list(q.targets), "ranks": dict(self.ranks),
                "hybrid_disagrees": self.hybrid_disagrees,
                "weighting": {"fusion": self.fusion, "dense_weight": _round(self.dense_weight), "reason": self.reason},
                "evidence": {"target": {m: e.to_dict() if e else None for m, e in self.target.items()},
                             "hybrid_first": self.hybrid_first.to_dict() if self.hybrid_first else None}}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def diagnose(prepared: Prepared, items: KnownItems, fusion: Fusion, reader: Reader) -> list[Diagnosis]:
    """Every question of ``items`` diagnosed from its runs in ``prepared`` (documents by the names its targets
    use), hybrid fused by ``fusion``; ``reader`` (on the index the runs came from) gives the passages' texts and
    the terms' IDF."""
    return [_diagnose(prepared, q, items.qrels[str(q.line)], fusion, reader) for q in items.questions]


def _diagnose(prepared: Prepared, q: Question, rels: Mapping[str, int], fusion: Fusion, reader: Reader) -> Diagnosis:
    """One question's diagnosis (:func:`diagnose`); ``rels`` its targets as qrels."""
    qid = str(q.line)
    runs = prepared.runs[qid]
    # Passages and documents ranked as the evaluation (and a search) ranks them: query/ranking.py.
    ranked = {m: prepared.ranked(qid, m, fusion, explain=True) for m in MODES}
    passages = {m: r.run for m, r in ranked.items()}
    documents = {m: prepared.ranked_documents(r, fusion) for m, r in ranked.items()}
    ranks = {m: first_relevant(documents[m], rels) for m in MODES}
    best = {m: next((pid for pid, _ in passages[m] if prepared.doc_of.get(pid) in q.targets), None) for m in MODES}
    leader = documents["hybrid"][0] if documents["hybrid"] else None
    first = None if leader is None or leader in q.targets else next(
        pid for pid, _ in passages["hybrid"] if prepared.doc_of.get(pid) == leader)
    records = reader.hydrate(list({pid for pid in (*best.values(), first) if pid is not None}))
    idf = reader.term_idf(q.text)
    w = ranked["hybrid"].weighting or Weighting(None, None, None, fusion.describe())
    terms = QueryTerms(q.text)

    def evidence(pid: int | None) -> Evidence | None:  # None also for a passage removed since the runs were made
        if pid is None or pid not in records:
            return None
        return _evidence(pid, prepared.doc_of[pid], records[pid], runs, ranked["hybrid"].scores[FUSED], w, terms,
                         idf)

    return Diagnosis(q, ranks, fusion.describe(), w.alpha, w.reason, {m: evidence(best[m]) for m in MODES},
                     evidence(first))


def _evidence(
    pid: int, document: str, record: PassageRecord, runs: Gathered, fused: Mapping[int, float], w: Weighting,
    terms: QueryTerms, idf: Mapping[str, float] | None,
) -> Evidence:
    """``pid``'s evidence: raw scores from the candidates (else the single runs), matches in its text and section
    path (as BM25 reads both), and the weighting's normalised scores times their weights."""
    cands = runs.candidates
    assert cands is not None  # an evaluation gathers every query's candidates
    bm25 = cands.lexical.get(pid, dict(runs.lexical or []).get(pid))
    cosine = cands.dense.get(pid, dict(runs.dense or []).get(pid))
    found = terms.find_many([record.text, record.section])
    matched = tuple((t, None if idf is None else idf.get(t)) for t in terms.matched([o for f in found for o in f]))
    dn = w.dense.get(pid) if w.dense is not None else None
    ln = w.lexical.get(pid) if w.lexical is not None else None
    dc = w.alpha * dn if w.alpha is not None and dn is not None else None
    lc = (1.0 - w.alpha) * ln if w.alpha is not None and ln is not None else None
    return Evidence(document, pid, record.section, bm25, cosine, matched, ln, dn, lc, dc, fused.get(pid))
