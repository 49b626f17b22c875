"""offset (pagination) and group_by="document" (each document once, by its best passage, its other ranked
passages folded in), through the Python API, the CLI and HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchapp import Index, IndexConfig
from searchapp.cli import app
from searchapp.errors import ConfigError

runner = CliRunner()
# "long": twenty short passages that all say "keys" (one document ranks first many times over);
# "a" and "b": one weaker passage each.
LONG = "\n\n".join(f"Keys keys keys, item {i}." for i in range(20))
OTHERS = {"a": "Signing keys are kept in the vault along with many other unrelated things of the office.",
          "b": "The keys of the shed hang on the door next to the calendar and the gardening gloves."}


@pytest.fixture()
def index(tmp_path: Path, fake_encoder) -> Index:  # type: ignore[no-untyped-def]
    ix = Index(tmp_path / "ix", create=True, config=IndexConfig.from_flat(max_tokens=16), encoder=fake_encoder)
    ix.add_texts([LONG, *OTHERS.values()], ids=["long", *OTHERS])
    yield ix
    ix.close()


@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
def test_offset_pages_through_the_same_ranking(index: Index, mode: str) -> None:
    every = index.search("keys", k=8, mode=mode)
    page = index.search("keys", k=3, offset=3, mode=mode)
    assert [(h.rank, h.passage_id) for h in page] == [(h.rank, h.passage_id) for h in every[3:6]]
    assert index.search("keys", k=3, offset=1000, mode=mode) == []


@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
def test_group_by_document_gives_each_document_once_by_its_best_passage(index: Index, mode: str) -> None:
    passages = index.search("keys", k=100, mode=mode)
    assert len({h.path for h in passages[:9]}) == 1  # the long document fills the first 3 x k passages
    grouped = index.search("keys", k=3, mode=mode, group_by="document")
    assert [h.path for h in grouped] == list(dict.fromkeys(h.path for h in passages))  # deepened until found
    for h in grouped:
        mine = [p.passage_id for p in passages if p.path == h.path]
        assert h.passage_id == mine[0] and h.other_passages == tuple(mine[1:])
    assert len(grouped[0].other_passages or ()) == 19
    assert [h.rank for h in grouped] == [1, 2, 3]
    second = index.search("keys", k=2, offset=1, mode=mode, group_by="document")
    assert [(h.rank, h.path) for h in second] == [(h.rank, h.path) for h in grouped[1:]]
    assert all(h.other_passages is None for h in passages)


@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
def test_a_grouped_search_reads_only_the_shown_passages(index: Index, mode: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Grouping reads the ranked passages' documents; only the page's passages are hydrated (text and all)."""
    from searchapp.store.folder import FolderReader

    ranked = {h.passage_id for h in index.search("keys", k=100, mode=mode)}
    hydrated: list[int] = []
    grouped_ids: list[int] = []
    real_hydrate, real_documents = FolderReader.hydrate, FolderReader.documents_of

    def hydrate(self, ids):  # type: ignore[no-untyped-def]
        hydrated.extend(ids)
        return real_hydrate(self, ids)

    def documents_of(self, ids):  # type: ignore[no-untyped-def]
        grouped_ids.extend(ids)
        return real_documents(self, ids)

    monkeypatch.setattr(FolderReader, "hydrate", hydrate)
    monkeypatch.setattr(FolderReader, "documents_of", documents_of)
    hits = index.search("keys", k=2, offset=1, mode=mode, group_by="document")
    assert sorted(hydrated) == sorted(h.passage_id for h in hits) and len(hits) == 2
    assert set(grouped_ids) == ranked  # every passage ranked, for its document (the ranking deepens to find 3)


@pytest.mark.parametrize("mode", ["hybrid", "lexical"])
def test_a_grouped_page_removed_while_shown_is_filled_from_the_next_documents(  # type: ignore[no-untyped-def]
        index: Index, mode: str, monkeypatch) -> None:
    """A document removed by a concurrent ingest between grouping and hydrating the page gives its place to the
    next document: the page still holds k documents."""
    from searchapp.store.folder import FolderReader

    full = index.search("keys", k=3, mode=mode, group_by="document")
    gone = full[0].passage_id
    real_hydrate = FolderReader.hydrate

    def hydrate(self, ids):  # type: ignore[no-untyped-def]
        return {pid: rec for pid, rec in real_hydrate(self, ids).items() if pid != gone}

    monkeypatch.setattr(FolderReader, "hydrate", hydrate)
    page = index.search("keys", k=2, mode=mode, group_by="document")
    assert [h.path for h in page] == [h.path for h in full[1:]]
    assert [h.rank for h in page] == [1, 2]


def test_unknown_group_by_and_negative_offset_are_refused(index: Index) -> None:
    with pytest.raises(ConfigError, match="group_by"):
        index.search("keys", group_by="folder")
    with pytest.raises(ConfigError, match="offset"):
        index.search("keys", offset=-1)


def test_cli_and_http(tmp_path: Path, index: Index, fake_model) -> None:  # type: ignore[no-untyped-def]
    base = ["query", "keys", "-i", str(tmp_path / "ix"), "-k", "3"]
    shown = runner.invoke(app, [*base, "--group-by", "document"])
    assert shown.exit_code == 0, shown.output
    assert "(+19 more passages)" in shown.stdout
    doc = json.loads(runner.invoke(app, [*base, "--group-by", "document", "--offset", "1", "--json"]).stdout)
    assert [h["rank"] for h in doc["hits"]] == [2, 3] and isinstance(doc["hits"][0]["other_passages"], list)
    bad = runner.invoke(app, [*base, "--group-by", "folder"])
    assert bad.exit_code == 2 and "group_by" in bad.stderr

    pytest.importorskip("fastapi")
    httpx = pytest.importorskip("httpx")
    from searchapp.client import Client
    from searchapp.server.app import create_app
    from tests.server_helpers import running

    with running(create_app(index)) as url:
        r = httpx.post(f"{url}/search", json={"query": "keys", "k": 3, "group_by": "document", "offset": 1})
        assert r.json()["hits"] == [h.to_dict() for h in index.search("keys", k=3, group_by="document", offset=1)]
        r = httpx.post(f"{url}/search/batch", json={"queries": ["keys"], "k": 1, "group_by": "document"})
        assert len(r.json()["results"][0]["hits"][0]["other_passages"]) == 19
        assert httpx.post(f"{url}/search", json={"query": "keys", "group_by": "folder"}).status_code == 422
        with Client(url) as client:
            assert client.search("keys", k=2, group_by="document") == index.search("keys", k=2, group_by="document")


def test_grouped_hybrid_scores_a_document_by_its_passages_as_query_documents_does(index: Index) -> None:
    from searchapp.query.documents import agreed_first, group_documents

    # 22 passages, fewer than k0: every passage is a candidate in both searches, so the fused scores agree.
    passages = index.search("keys", k=100, mode="hybrid")
    path = {h.passage_id: h.path for h in passages}.get
    first = agreed_first({h.passage_id: h.dense_score for h in passages},
                         {h.passage_id: h.lexical_score for h in passages}, path)
    # Threshold 0: this corpus's fused z-scores stay under the default's 1, where nothing would be added.
    expected = group_documents([(h.passage_id, h.score) for h in passages], path, 0.5, 0.0, first)
    grouped = index.search("keys", k=3, mode="hybrid", group_by="document", document_threshold=0.0)
    assert [(h.path, h.passage_id) for h in grouped] == [(d, s.best) for d, s in expected]
    assert [h.score for h in grouped] == pytest.approx([s.score for _, s in expected])
    # The long document's further passages count: its score is more than its best passage's.
    assert grouped[0].path == "long" and grouped[0].score > passages[0].score
    plain = index.search("keys", k=3, mode="hybrid", group_by="document", document_weight=0.0)
    assert plain[0].score == pytest.approx(passages[0].score)
