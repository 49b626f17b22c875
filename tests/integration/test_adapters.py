"""Each retriever adapter with its real framework package, in-process and over HTTP through ``Client``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from searchapp import Index, IndexConfig

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no network calls from a test

TEXTS = ["Rotate the signing keys with the rotate command.", "Signing keys expire after a year.",
         "The database stores passages and vectors."]
IDS = ["k1", "k2", "d1"]
METAS = [{"team": "security"}, {"team": "security"}, {"team": "storage"}]
QUERY = "how do I rotate the signing keys?"


@pytest.fixture()
def index(tmp_path: Path, fake_encoder) -> Index:  # type: ignore[no-untyped-def]
    ix = Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder)
    ix.add_texts(TEXTS, ids=IDS, metadatas=METAS)
    yield ix
    ix.close()


def test_langchain_retriever(index: Index) -> None:
    pytest.importorskip("langchain_core", reason="the langchain extra is not installed")
    from searchapp.adapters.langchain import SearchappRetriever

    expected = index.search(QUERY, k=2)
    docs = SearchappRetriever(searcher=index, k=2).invoke(QUERY)
    assert [d.page_content for d in docs] == [h.text for h in expected]
    assert docs[0].metadata["path"] == "k1" and docs[0].metadata["team"] == "security"
    assert docs[0].metadata["source"] == "text"
    assert docs[0].metadata["score"] == pytest.approx(expected[0].score)
    assert docs[0].id == str(expected[0].passage_id)
    filtered = SearchappRetriever(searcher=index, k=3, filters={"metadata": {"team": "storage"}}).invoke(QUERY)
    assert [d.metadata["path"] for d in filtered] == ["d1"]


def test_llamaindex_retriever(index: Index) -> None:
    pytest.importorskip("llama_index.core", reason="the llamaindex extra is not installed")
    from llama_index.core.schema import NodeWithScore

    from searchapp.adapters.llamaindex import SearchappRetriever

    expected = index.search(QUERY, k=2, mode="lexical")
    nodes = SearchappRetriever(index, k=2, mode="lexical").retrieve(QUERY)
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    assert [n.node.get_content() for n in nodes] == [h.text for h in expected]
    assert [n.score for n in nodes] == pytest.approx([h.score for h in expected])
    first = nodes[0].node
    assert (first.start_char_idx, first.end_char_idx) == (expected[0].start, expected[0].end)
    assert first.metadata["title"] == "k1"


def test_haystack_component_in_a_pipeline(index: Index) -> None:
    pytest.importorskip("haystack", reason="the haystack extra is not installed")
    from haystack import Pipeline

    from searchapp.adapters.haystack import SearchappRetriever

    pipe = Pipeline()
    pipe.add_component("retriever", SearchappRetriever(index, top_k=3))
    out = pipe.run({"retriever": {"query": QUERY, "top_k": 1}})
    docs = out["retriever"]["documents"]
    assert [d.content for d in docs] == [index.search(QUERY, k=1)[0].text]
    assert docs[0].meta["path"] == "k1" and docs[0].score is not None
    out = pipe.run({"retriever": {"query": QUERY, "filters": {"metadata": {"team": "storage"}}}})
    assert [d.meta["path"] for d in out["retriever"]["documents"]] == ["d1"]


def test_client_over_http_drives_an_adapter(index: Index) -> None:
    pytest.importorskip("fastapi", reason="the server extra is not installed")
    pytest.importorskip("langchain_core", reason="the langchain extra is not installed")
    from searchapp.adapters.langchain import SearchappRetriever
    from searchapp.client import Client
    from searchapp.errors import ConfigError
    from searchapp.server.app import create_app
    from tests.server_helpers import running

    with running(create_app(index, api_key="k")) as url, Client(url, api_key="k") as client:
        assert client.search(QUERY, k=2) == index.search(QUERY, k=2)
        assert {h.source for h in client.search(QUERY, k=2)} == {"text"}
        assert client.search_batch([QUERY, "database"], k=1, mode="lexical") == index.search_batch(
            [QUERY, "database"], k=1, mode="lexical"
        )
        assert client.add_texts(["Keys live in /etc/keys."], ids=["dir/k3"])["added"] == 1
        docs = SearchappRetriever(searcher=client, k=1).invoke("where do keys live")
        assert docs[0].metadata["path"] == "dir/k3"
        assert client.remove(["dir/k3", "nope"]) == 1
        assert client.status()["documents"] == 3
        with pytest.raises(ConfigError, match="filter key"):
            client.search(QUERY, filters={"metadata": {"a b": 1}})


def test_a_users_metadata_is_never_overwritten_by_the_hits_fields(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    from searchapp.adapters.common import hit_metadata

    ix = Index(tmp_path / "own", create=True, config=IndexConfig(), encoder=fake_encoder)
    ix.add_texts(["rotate the signing keys"], ids=["k"], metadatas=[{"path": "wiki/Keys", "score": 5, "team": "x"}])
    hit = ix.search("signing keys", k=1)[0]
    meta = hit_metadata(hit)
    assert (meta["path"], meta["score"], meta["team"]) == ("wiki/Keys", 5, "x")  # the user's own values
    assert meta["searchapp"]["path"] == "k" and meta["searchapp"]["score"] == pytest.approx(hit.score)
    assert meta["title"] == "k"  # a key the user did not set still carries the hit's
    ix.close()


def test_the_adapters_metadata_says_where_the_passage_is_as_line_and_column(index: Index) -> None:
    from searchapp.adapters.common import hit_metadata

    index.add_texts(["Runbook\n\n   Rotate the backup keys\ron the first Monday."], ids=["runbook"])
    hit = index.search("backup keys monday", k=1, mode="lexical")[0]
    meta = hit_metadata(hit)
    place = {k: meta[k] for k in ("line", "column", "end_line", "end_column")}
    assert place == {"line": 1, "column": 1, "end_line": 4, "end_column": 21}
    assert meta["searchapp"]["line"] == 1


def test_each_adapter_gives_the_clean_text_on_asking(index: Index) -> None:
    pytest.importorskip("langchain_core", reason="the langchain extra is not installed")
    pytest.importorskip("llama_index.core", reason="the llamaindex extra is not installed")
    pytest.importorskip("haystack", reason="the haystack extra is not installed")
    from searchapp.adapters import haystack, langchain, llamaindex
    from searchapp.errors import ConfigError

    index.add_texts(["Prune   the   roses.\n\n\n{* ../../docs_src/roses.py *}\nIn  March."], ids=["r1"])
    clean = "Prune the roses.\n\nIn March."
    flt = {"metadata": {}, "path_prefix": "r1"}
    assert [d.page_content for d in langchain.SearchappRetriever(searcher=index, text="clean", filters=flt).invoke(
        "roses")] == [clean]
    assert [n.node.get_content() for n in llamaindex.SearchappRetriever(index, text="clean", filters=flt).retrieve(
        "roses")] == [clean]
    assert [d.content for d in haystack.SearchappRetriever(index, text="clean", filters=flt).run("roses")[
        "documents"]] == [clean]
    assert "   " in haystack.SearchappRetriever(index, filters=flt).run("roses")["documents"][0].content
    with pytest.raises(ConfigError, match="text 'tidy': use exact or clean"):
        haystack.SearchappRetriever(index, text="tidy")
    with pytest.raises(ConfigError, match="text 'tidy': use exact or clean"):
        llamaindex.SearchappRetriever(index, text="tidy")
    with pytest.raises(ConfigError, match="text 'tidy': use exact or clean"):
        langchain.SearchappRetriever(searcher=index, text="tidy")
