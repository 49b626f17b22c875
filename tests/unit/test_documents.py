"""A document's score from its passages (query/documents.py) and the document-level evaluation that uses it."""

from __future__ import annotations

import pytest

from searchapp.evaluate.runner import Prepared, QueryRuns
from searchapp.query.documents import DOCUMENT_PASSAGES, agreed_first, group_documents
from searchapp.query.fusion import Fusion
from searchapp.store.rows import Candidates

DOC = {1: "stub.md", 2: "guide.md", 3: "guide.md", 4: "guide.md", 5: "guide.md", 6: "other.md"}


def test_weight_zero_ranks_a_document_by_its_best_passage() -> None:
    run = [(1, 3.0), (2, 2.9), (3, 2.8), (6, 0.5), (4, 0.1)]
    docs = group_documents(run, DOC.get)
    assert [(d, s.best, s.score, s.others) for d, s in docs] == [
        ("stub.md", 1, 3.0, []), ("guide.md", 2, 2.9, [3, 4]), ("other.md", 6, 0.5, [])]


def test_further_passages_above_the_threshold_add_to_a_document() -> None:
    # guide.md answers in three places, stub.md once, a little better: the page that answers more ranks first.
    run = [(1, 3.0), (2, 2.9), (3, 2.8), (4, 2.0), (5, 1.9), (6, 0.5)]
    docs = dict(group_documents(run, DOC.get, weight=0.5, threshold=1.0))
    # Only the next DOCUMENT_PASSAGES - 1 passages count, each by how far it passes the threshold.
    assert DOCUMENT_PASSAGES == 3
    assert docs["guide.md"].score == pytest.approx(2.9 + 0.5 * ((2.8 - 1.0) + (2.0 - 1.0)))
    assert docs["guide.md"].others == [3, 4, 5]
    assert docs["stub.md"].score == 3.0
    assert [d for d, _ in group_documents(run, DOC.get, weight=0.5, threshold=1.0)][:2] == ["guide.md", "stub.md"]


def test_passages_below_the_threshold_add_nothing() -> None:
    run = [(1, 3.0), (2, 2.9), (3, 0.9), (4, 0.2)]
    assert [d for d, _ in group_documents(run, DOC.get, weight=0.5, threshold=1.0)] == ["stub.md", "guide.md"]


def test_a_passage_without_a_document_is_left_out() -> None:
    assert [d for d, _ in group_documents([(99, 5.0), (1, 1.0)], DOC.get)] == ["stub.md"]


def test_the_evaluation_ranks_documents_as_a_grouped_hybrid_search_does() -> None:
    # The same candidates, scored with and without the document weight: only hybrid mode's ranking moves.
    low = range(100, 120)  # the rest of the candidates, far below: the leaders stand 2-3 sd above their mean
    dense = {1: 0.80, 2: 0.78, 3: 0.77, 4: 0.76} | {p: 0.10 for p in low}
    lexical = {1: 5.0, 2: 5.1, 3: 5.0, 4: 4.8} | {p: 0.0 for p in low}  # the sides disagree on the first
    doc_of = DOC | {p: f"other{p}.md" for p in low}
    cands = Candidates("passages", dense, lexical)
    by_dense = sorted(dense.items(), key=lambda x: -x[1])
    runs = {"q": QueryRuns(lexical=sorted(lexical.items(), key=lambda x: -x[1]), dense=by_dense, candidates=cands)}

    class Data:
        queries = {"q": "passages"}
        qrels = {"q": {"guide.md": 1}}

    plain = Prepared(Data(), Fusion(method="convex", document_weight=0.0), doc_of, runs, k0=100)
    grouped = Prepared(Data(), Fusion(method="convex"), doc_of, runs, k0=100)
    assert plain.run_for("hybrid")["q"][0] == "stub.md"
    assert grouped.run_for("hybrid")["q"][0] == "guide.md"
    assert grouped.run_for("dense")["q"][0] == "stub.md"  # a single mode ranks by the best passage


def test_the_document_both_sides_rank_first_stays_first() -> None:
    run = [(1, 3.0), (2, 2.9), (3, 2.8), (4, 2.0), (6, 0.5)]
    assert agreed_first({1: 0.9, 2: 0.8}, {1: 7.0, 3: 6.0}, DOC.get) == "stub.md"
    docs = group_documents(run, DOC.get, weight=0.5, threshold=1.0, first="stub.md")
    assert [d for d, _ in docs][:2] == ["stub.md", "guide.md"]
    assert docs[0][1].score >= docs[1][1].score  # scores still fall with rank
    # Without agreement the further passages decide.
    assert agreed_first({1: 0.9, 2: 0.8}, {3: 7.0, 1: 6.0}, DOC.get) is None
    assert group_documents(run, DOC.get, weight=0.5, threshold=1.0)[0][0] == "guide.md"
    # Both sides' first passages in one document agree on it; an unknown passage agrees on nothing.
    assert agreed_first({2: 0.9, 1: 0.8}, {3: 7.0, 1: 6.0}, DOC.get) == "guide.md"
    assert agreed_first({99: 0.9}, {99: 7.0}, DOC.get) is None
