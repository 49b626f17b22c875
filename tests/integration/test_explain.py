"""--explain / explain=True: both raw scores, both normalised scores, the dense weight the fusion chose and why
(the adaptive rule's own reason), the matched terms; through the Python API, the CLI and HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchapp import Index
from searchapp.cli import app
from searchapp.query.adaptive import adaptive_choice
from searchapp.query.fusion import Fusion

runner = CliRunner()


@pytest.fixture()
def index(small_index: Index) -> Index:
    return small_index


def test_adaptive_explanation_is_the_rules_own_choice_and_reproduces_the_fused_score(index: Index) -> None:
    query = "how do I rotate signing keys?"
    hits = index.search(query, k=3, explain=True)
    qvec = index.encoder.encode([query], truncate=True)[0]
    with index.stores.reader() as reader:
        choice = adaptive_choice(reader.gather(query, qvec, 100), Fusion())
    for h in hits:
        e = h.explain
        assert e is not None
        assert (e.dense, e.lexical) == (h.dense_score, h.lexical_score)
        assert e.dense_weight == choice.alpha and e.reason == choice.reason()
        assert e.reason.startswith("question:") and e.fusion.startswith("adaptive zscore")
        assert e.dense_normalised is not None and e.lexical_normalised is not None
        w = e.dense_weight
        assert h.score == pytest.approx(w * e.dense_normalised + (1 - w) * e.lexical_normalised)
    assert hits[0].explain is not None and hits[0].explain.matched_terms == ("rotate", "signing", "keys")


def test_convex_rrf_and_single_side_explanations(index: Index) -> None:
    convex = index.search("signing keys", k=2, explain=True, method="convex", alpha=0.3)[0].explain
    assert convex is not None and convex.dense_weight == 0.3 and "fixed dense weight 0.3" in convex.reason
    rrf = index.search("signing keys", k=2, explain=True, method="rrf")[0].explain
    assert rrf is not None and rrf.dense_weight is None and rrf.dense_normalised is None and "rank" in rrf.reason
    lexical = index.search("signing keys", mode="lexical", explain=True)[0].explain
    assert lexical is not None and lexical.dense is None and lexical.lexical is not None
    assert lexical.reason == "lexical mode: ranked by BM25 alone"
    dense = index.search("signing keys", mode="dense", explain=True)[0].explain
    assert dense is not None and dense.lexical is None and dense.dense is not None
    assert index.search("signing keys")[0].explain is None  # only when asked


def test_cli_explain_table_and_json(tmp_path: Path, index: Index, fake_model) -> None:  # type: ignore[no-untyped-def]
    args = ["query", "how do I rotate signing keys?", "-i", str(tmp_path / "ix"), "-k", "1", "--explain"]
    shown = runner.invoke(app, args)
    assert shown.exit_code == 0, shown.output
    assert "dense weight" in shown.stdout and "question: dense weight 0.8" in shown.stdout
    assert "matched terms: rotate, signing, keys" in shown.stdout
    doc = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert set(doc["hits"][0]["explain"]) == {
        "dense", "lexical", "dense_normalised", "lexical_normalised", "dense_weight", "fusion", "reason",
        "matched_terms",
    }
    plain = json.loads(runner.invoke(app, args[:-1] + ["--json"]).stdout)
    assert plain["hits"][0]["explain"] is None


def test_http_explain_on_request(index: Index) -> None:
    pytest.importorskip("fastapi")
    httpx = pytest.importorskip("httpx")
    from searchapp.client import Client
    from searchapp.server.app import create_app
    from tests.server_helpers import running

    with running(create_app(index)) as url:
        body = httpx.post(f"{url}/search", json={"query": "signing keys", "k": 1, "explain": True}).json()
        assert body["hits"][0]["explain"] == index.search("signing keys", k=1, explain=True)[0].explain.to_dict()  # type: ignore[union-attr]
        batch = httpx.post(f"{url}/search/batch", json={"queries": ["signing keys"], "explain": True}).json()
        assert batch["results"][0]["hits"][0]["explain"]["matched_terms"] == ["signing", "keys"]
        with Client(url) as client:
            assert client.search("signing keys", k=1, explain=True) == index.search("signing keys", k=1, explain=True)
