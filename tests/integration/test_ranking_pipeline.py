"""One ranking pipeline (query/ranking.py): a search and an evaluation rank by the same function, and a rerank
stage registered in a test (query/rerank.py) reaches ``Index.search``, the HTTP API, the MCP server, ``--explain``
and ``searchapp eval`` with no other edit."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from searchapp import Index
from searchapp.cli import app
from searchapp.query import ranking
from searchapp.query.rerank import register_reranker, unregister_reranker
from tests.conftest import SMALL_TEXTS

PACKAGE = Path(__file__).resolve().parents[2] / "searchapp"
MARK = "quarter"  # the test reranker puts the passages holding this word first


class Marked:
    """Scores a passage 1 when it holds ``MARK``, else 0, and records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.calls.append((query, list(texts)))
        return [1.0 if MARK in t else 0.0 for t in texts]


@pytest.fixture()
def marked() -> Iterator[Marked]:
    reranker = Marked()
    register_reranker("marked")(lambda: reranker)
    yield reranker
    unregister_reranker("marked")


def _calls(tree: ast.AST, names: set[str]) -> list[str]:
    return [n.func.id if isinstance(n.func, ast.Name) else n.func.attr for n in ast.walk(tree)
            if isinstance(n, ast.Call) and (getattr(n.func, "id", None) in names or getattr(n.func, "attr", None)
                                            in names)]


def test_only_the_pipeline_fuses_and_groups_and_both_callers_run_it() -> None:
    # Fusion and grouping are called from query/ranking.py alone (their own modules aside); the engine and the
    # evaluation's runner each call the pipeline's stages once.
    staged = {"fuse", "hybrid_documents", "group_documents"}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in ("query/ranking.py", "query/fusion.py", "query/documents.py"):
            continue
        assert not _calls(ast.parse(path.read_text(encoding="utf-8")), staged), rel
    for rel in ("query/engine.py", "evaluate/runner.py"):
        found = _calls(ast.parse((PACKAGE / rel).read_text(encoding="utf-8")), {"passages", "documents"})
        assert found.count("passages") == 1 and found.count("documents") >= 1, (rel, found)


def test_a_search_and_an_evaluation_give_the_same_ranking(small_index: Index, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    """The same pipeline call makes a search's passages and an evaluation's: recorded, both rank the same gathered
    evidence to the same run."""
    from searchapp.evaluate.runner import collect
    from searchapp.query.fusion import Fusion

    seen: list[tuple[str, list[tuple[int, float]]]] = []
    passages = ranking.Ranking.passages

    def recorded(self: ranking.Ranking, gathered: ranking.Gathered, mode: str, *a: Any, **kw: Any) -> ranking.Ranked:
        out = passages(self, gathered, mode, *a, **kw)
        seen.append((mode, list(out.run)))
        return out

    monkeypatch.setattr(ranking.Ranking, "passages", recorded)

    class Questions:
        queries = {"q": "rotate the signing keys"}
        qrels = {"q": {"t0": 1}}

    hits = small_index.search("rotate the signing keys", k=5)
    served = seen[-1][1]
    assert [(h.passage_id, h.score) for h in hits] == served[:5]
    prepared = collect(Questions(), small_index.stores, small_index.query_encoder, Fusion(), 100)
    prepared.run_for("hybrid")
    assert seen[-1] == ("hybrid", served)


def test_a_rerank_stage_reaches_search_http_mcp_explain_and_eval(small_index: Index, marked: Marked,
                                                                 tmp_path: Path, fake_model: Any) -> None:
    import httpx

    from searchapp.server.app import create_app
    from tests.integration.test_mcp import drive
    from tests.server_helpers import running

    query = "signing keys expire"
    plain = small_index.search(query, k=3)
    assert MARK not in plain[0].text  # the reranker has something to change
    hits = small_index.search(query, k=3, rerank="marked")
    assert MARK in hits[0].text and hits[0].scores["rerank"] == 1.0 and hits[0].score == 1.0
    assert list(hits[0].scores) == ["dense", "lexical", "fused", "rerank"]
    assert marked.calls[-1][0] == query and len(marked.calls[-1][1]) == len(SMALL_TEXTS)  # up to rerank_depth
    alone = small_index.search(query, k=3, rerank="marked", rerank_depth=1)  # the first re-scored alone
    assert [h.passage_id for h in alone] == [h.passage_id for h in plain] and "rerank" not in alone[1].scores
    grouped = small_index.search(query, k=2, rerank="marked", group_by="document")
    assert MARK in grouped[0].text

    with running(create_app(small_index)) as url, httpx.Client(base_url=url, timeout=60) as http:
        answer = http.post("/search", json={"query": query, "k": 3, "fusion": {"rerank": "marked"}})
        assert answer.status_code == 200, answer.text
        assert answer.json()["hits"][0]["scores"]["rerank"] == 1.0
        unknown = http.post("/search", json={"query": query, "fusion": {"rerank": "nothing"}})
        assert unknown.status_code == 400 and "unknown reranker 'nothing'" in unknown.text

    async def session(client: Any) -> None:
        found = await client.call_tool("search", {"query": query, "k": 3, "fusion": {"rerank": "marked"}})
        assert not found.is_error, found
        assert found.structured_content["hits"][0]["scores"]["rerank"] == 1.0

    from searchapp.server.mcp_server import create_server

    drive(create_server(small_index), session)

    location = str(small_index.location)
    small_index.close()
    runner = CliRunner()
    shown = runner.invoke(app, ["query", query, "--index", location, "--rerank", "marked", "--explain", "-k", "1"])
    assert shown.exit_code == 0, shown.output
    assert "| rerank 1.000" in shown.stdout

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keys.md").write_text("# Keys\n\nSigning keys expire after a year.\n", encoding="utf-8")
    (docs / "rotate.md").write_text(f"# Rotate\n\nRotate the signing keys every {MARK}.\n", encoding="utf-8")
    questions = tmp_path / "questions.tsv"
    questions.write_text(f"{query}\tkeys.md\n", encoding="utf-8")
    before = len(marked.calls)
    out = runner.invoke(app, ["eval", str(docs), "--questions", str(questions), "--index", str(tmp_path / "e"),
                              "--mode", "hybrid", "--rerank", "marked", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["misses"]["hybrid"][0]["first"] == "rotate.md"  # the reranker's choice
    assert len(marked.calls) > before and marked.calls[-1][0] == query
