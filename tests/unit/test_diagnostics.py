"""Per-question diagnostics on a hand-built case: ranks by document, hybrid's disagreement, and the evidence of
both sides (matched terms in the text or the section path, raw scores, contributions that add up to the fused
score under every weighting fusion)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from searchapp.evaluate.diagnostics import diagnose
from searchapp.evaluate.known_items import KnownItems, Question
from searchapp.evaluate.runner import Prepared, QueryRuns
from searchapp.query.fusion import Fusion
from searchapp.store.base import Reader
from searchapp.store.rows import Candidates, PassageRecord
from searchapp.types import Run

TEXTS = {
    1: ("Keys are rotated yearly.", "Signing"),
    2: ("Rotate signing keys with the rotate command.", "Commands"),
    3: ("Nightly backups go to cold storage.", "Backups"),
    4: ("Tomatoes want water.", ""),
}
DOC_OF = {1: "a.md", 2: "a.md", 3: "b.md", 4: "c.md"}
IDF = {"rotate": 1.5, "signing": 0.7, "keys": 2.0, "backups": 2.2}


class StubReader(Reader):
    """The passages' texts and the IDF a store would give; no search."""

    def __init__(self, idf: dict[str, float] | None) -> None:
        self.idf = idf

    def lexical(self, query: str, k: int) -> Run:
        raise AssertionError("not searched")

    def dense(self, qvec: np.ndarray, k: int) -> Run:
        raise AssertionError("not searched")

    def gather(self, query: str, qvec: np.ndarray, k0: int) -> Candidates:
        raise AssertionError("not searched")

    def hydrate(self, ids: Sequence[int]) -> dict[int, PassageRecord]:
        return {i: PassageRecord(i, DOC_OF[i], DOC_OF[i], 0, len(TEXTS[i][0]), TEXTS[i][0], section=TEXTS[i][1])
                for i in ids}

    def documents_of(self, ids: Sequence[int]) -> dict[int, int]:
        raise AssertionError("not grouped")

    def term_idf(self, query: str) -> dict[str, float] | None:
        return None if self.idf is None else {t: w for t, w in self.idf.items() if t in query.lower()}


def case() -> tuple[Prepared, KnownItems]:
    items = KnownItems("docs", (Question(1, "rotate signing keys", ("a.md",)),
                                Question(2, "nightly backups", ("b.md",))))
    runs = {
        # a.md first lexically (its passage 2), second by the cosine (after b.md's passage 3).
        "1": QueryRuns(
            lexical=[(2, 5.0), (3, 2.0)], dense=[(3, 0.9), (1, 0.8), (4, 0.5), (2, 0.3)],
            candidates=Candidates("rotate signing keys", {1: 0.8, 2: 0.3, 3: 0.9, 4: 0.5},
                                  {1: 0.0, 2: 5.0, 3: 2.0, 4: 0.0})),
        # b.md first on every side.
        "2": QueryRuns(
            lexical=[(3, 4.0)], dense=[(3, 0.7), (4, 0.2)],
            candidates=Candidates("nightly backups", {3: 0.7, 4: 0.2}, {3: 4.0, 4: 0.0})),
    }
    return Prepared(items, Fusion(), dict(DOC_OF), runs, k0=100), items


def test_ranks_disagreement_and_evidence_under_convex_fusion() -> None:
    prepared, items = case()
    # minmax over the candidates: dense (c - 0.3) / 0.6, lexical b / 5; fused 0.8 dense + 0.2 lexical:
    # passage 3 (b.md) 0.88, passage 1 (a.md) 0.667, passage 4 0.267, passage 2 0.2.
    fusion = Fusion(method="convex", norm="minmax", alpha=0.8)
    first, second = diagnose(prepared, items, fusion, StubReader(IDF))
    assert first.ranks == {"lexical": 1, "dense": 2, "hybrid": 2}
    assert first.hybrid_disagrees and first.worth_reading  # lexical had a.md first, hybrid lost it
    assert (first.dense_weight, first.fusion) == (0.8, "convex minmax alpha=0.8")
    target, top = first.target["hybrid"], first.hybrid_first
    assert target is not None and top is not None
    # The target's best passage in hybrid (and dense) is passage 1, not lexical's passage 2: it matches "signing"
    # in its section path only, and "rotate" through its stem.
    assert {m: e.passage_id for m, e in first.target.items() if e} == {"lexical": 2, "dense": 1, "hybrid": 1}
    assert (target.document, target.passage_id, target.bm25, target.cosine) == ("a.md", 1, 0.0, 0.8)
    lexical = first.target["lexical"]
    assert lexical is not None and (lexical.bm25, lexical.cosine, lexical.fused) == (5.0, 0.3, pytest.approx(0.2))
    assert target.matched_terms == (("rotate", 1.5), ("signing", 0.7), ("keys", 2.0))
    assert target.dense_normalised == pytest.approx(0.5 / 0.6) and target.lexical_normalised == 0.0
    assert target.dense_contribution == pytest.approx(0.8 * 0.5 / 0.6) and target.lexical_contribution == 0.0
    assert (top.document, top.passage_id, top.bm25, top.cosine, top.matched_terms) == ("b.md", 3, 2.0, 0.9, ())
    assert (top.dense_contribution, top.lexical_contribution) == pytest.approx((0.8, 0.2 * 0.4))
    for e in (target, lexical, top):
        assert e.fused == pytest.approx(e.dense_contribution + e.lexical_contribution)
    assert second.ranks == {"lexical": 1, "dense": 1, "hybrid": 1}
    assert not second.hybrid_disagrees and not second.worth_reading
    assert second.hybrid_first is None and {m: e.passage_id for m, e in second.target.items() if e} == dict.fromkeys(
        ("lexical", "dense", "hybrid"), 3)
    out = first.to_dict()
    assert (out["line"], out["targets"], out["ranks"], out["hybrid_disagrees"]) == (
        1, ["a.md"], {"lexical": 1, "dense": 2, "hybrid": 2}, True)
    assert out["evidence"]["target"]["hybrid"]["matched_terms"][0] == {"term": "rotate", "idf": 1.5}
    assert out["evidence"]["target"]["lexical"]["passage_id"] == 2
    assert out["evidence"]["hybrid_first"]["document"] == "b.md"


@pytest.mark.parametrize("fusion", [Fusion(), Fusion(method="convex", norm="zscore", alpha=0.3)])
def test_contributions_add_up_to_the_fused_score(fusion: Fusion) -> None:
    prepared, items = case()
    for d in diagnose(prepared, items, fusion, StubReader(IDF)):
        assert d.dense_weight is not None
        for e in (*d.target.values(), d.hybrid_first):
            if e is not None:
                assert e.dense_contribution is not None and e.lexical_contribution is not None
                assert e.fused == pytest.approx(e.dense_contribution + e.lexical_contribution)


def test_rrf_and_a_store_without_idf_leave_those_parts_out() -> None:
    prepared, items = case()
    first = diagnose(prepared, items, Fusion(method="rrf"), StubReader(None))[0]
    target = first.target["hybrid"]
    assert first.dense_weight is None and target is not None
    assert target.dense_contribution is None and target.fused is not None
    assert target.matched_terms == (("rotate", None), ("signing", None), ("keys", None))
    # RRF (k=60): passage 3 (dense 1st, lexical 2nd) 0.0325, passage 2 (4th, 1st) 0.0320, passage 1 (2nd, 3rd).
    assert first.ranks["hybrid"] == 2 and target.passage_id == 2
    assert first.hybrid_first is not None and first.hybrid_first.passage_id == 3
