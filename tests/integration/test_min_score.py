"""min_score: a cut-off on the hit's cosine (comparable across queries), in dense and hybrid modes, refused in
lexical mode; through the Python API, the CLI and HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchapp import Index
from searchapp.cli import app
from searchapp.errors import ConfigError

runner = CliRunner()


@pytest.fixture()
def index(small_index: Index) -> Index:
    return small_index


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
def test_min_score_keeps_exactly_the_hits_whose_cosine_reaches_it(index: Index, mode: str) -> None:
    every = index.search("rotate signing keys", k=5, mode=mode)
    cosines = sorted({h.dense_score for h in every if h.dense_score is not None})
    assert len(cosines) >= 3  # a threshold in the middle has something on each side
    threshold = cosines[len(cosines) // 2]
    kept = index.search("rotate signing keys", k=5, mode=mode, min_score=threshold)
    assert kept and all(h.dense_score is not None and h.dense_score >= threshold for h in kept)
    assert [h.passage_id for h in kept] == [h.passage_id for h in every if h.dense_score >= threshold]  # type: ignore[operator]
    assert [h.rank for h in kept] == list(range(1, len(kept) + 1))
    assert index.search("rotate signing keys", mode=mode, min_score=1.0) == []


def test_min_score_fills_k_from_deeper_hybrid_candidates(index: Index) -> None:
    every = index.search("rotate signing keys", k=5)
    best = max(every, key=lambda h: h.dense_score or -1)
    top1 = index.search("rotate signing keys", k=1, min_score=best.dense_score)
    assert [h.passage_id for h in top1] == [best.passage_id]


def test_min_score_is_refused_in_lexical_mode_and_out_of_range(index: Index) -> None:
    with pytest.raises(ConfigError, match="lexical mode"):
        index.search("keys", mode="lexical", min_score=0.3)
    with pytest.raises(ConfigError, match=r"\[-1, 1\]"):
        index.search("keys", min_score=1.5)


def test_cli_and_http_min_score(tmp_path: Path, index: Index, fake_model) -> None:  # type: ignore[no-untyped-def]
    args = ["query", "rotate signing keys", "-i", str(tmp_path / "ix"), "--json", "-k", "5"]
    every = json.loads(runner.invoke(app, args).stdout)["hits"]
    threshold = sorted(h["dense_score"] for h in every)[-2]
    kept = json.loads(runner.invoke(app, [*args, "--min-score", str(threshold)]).stdout)["hits"]
    assert 1 <= len(kept) < len(every) and all(h["dense_score"] >= threshold for h in kept)
    refused = runner.invoke(app, ["query", "keys", "-i", str(tmp_path / "ix"), "--mode", "lexical",
                                  "--min-score", "0.3"])
    assert refused.exit_code == 2 and refused.stderr.startswith("error: min_score is a threshold on the cosine")

    pytest.importorskip("fastapi")
    httpx = pytest.importorskip("httpx")
    from searchapp.server.app import create_app
    from tests.server_helpers import running

    with running(create_app(index)) as url:
        r = httpx.post(f"{url}/search", json={"query": "rotate signing keys", "k": 5, "min_score": threshold})
        assert [h["passage_id"] for h in r.json()["hits"]] == [h["passage_id"] for h in kept]
        r = httpx.post(f"{url}/search", json={"query": "keys", "mode": "lexical", "min_score": 0.3})
        assert r.status_code == 400 and "lexical mode" in r.json()["error"]["message"]
        assert httpx.post(f"{url}/search", json={"query": "keys", "min_score": 2}).status_code == 422
