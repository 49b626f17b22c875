"""A NUL character behaves alike on both backends: refused in an added text's id, title, text or metadata, with
the whole batch refused and the bad item named by its position (nothing half-added); a filter, a lookup or a
removal target with one matches nothing (issue: hardening, round 3; docs/reliability.md). PostgreSQL's text
cannot hold NUL: there, each of these was a psycopg DataError, HTTP 500."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from searchapp import Index
from searchapp.errors import ConfigError, DocumentNotFoundError
from searchapp.server.app import create_app

BAD = [
    ({"texts": ["a\x00b"]}, "its text holds a NUL"),
    # An id meets the id rule first (searchapp/ids.py: no character that does not show), naming the item alike.
    ({"ids": ["x\x00y"]}, "id 'x\\\\x00y' holds U\\+0000"),
    ({"titles": ["t\x00"]}, "its title holds a NUL"),
    ({"metadatas": [{"k": "v\x00"}]}, "its metadata holds a NUL"),
    ({"metadatas": [{"k": ["ok", "v\x00"]}]}, "its metadata holds a NUL"),
]


@pytest.mark.parametrize("bad, message", BAD)
def test_a_nul_in_an_added_text_refuses_the_batch_naming_the_item(index_at: Callable[..., Index],
                                                                  bad: dict[str, list[Any]], message: str) -> None:
    ix = index_at()
    texts = ["rotate the signing keys", "water the tomatoes", "a third text"]
    batch: dict[str, list[Any]] = {"texts": list(texts), "ids": ["a", "b", "c"], "titles": ["A", "B", "C"],
                                   "metadatas": [{}, {}, {}]}
    for field, (value,) in bad.items():
        batch[field][1] = value
    with pytest.raises(ConfigError, match=f"^text 1[ :].*{message}"):
        ix.add_texts(**batch)
    assert ix.stats().documents == 0  # nothing of it was added


def test_nul_in_filters_lookups_and_removals_matches_nothing(index_at: Callable[..., Index]) -> None:
    ix = index_at()
    ix.add_texts(["rotate the signing keys", "water the tomatoes"], ids=["a", "b"], metadatas=[{"k": "v"}, {}])
    for filters in ({"metadata": {"k": "v\x00"}}, {"metadata": {"k": ["v\x00", "w"]}}, {"path_prefix": "a\x00"},
                    {"path_glob": "*\x00*"}, {"path_prefix": "a", "path_glob": "\x00"}):
        for mode in ("lexical", "dense", "hybrid"):
            assert ix.search("signing keys", mode=mode, filters=filters) == [], (filters, mode)
    assert ix.search("signing keys", mode="lexical", filters={"metadata": {"k": ["v\x00", "v"]}})[0].path == "a"
    assert [h.path for h in ix.search("signing\x00 keys", mode="lexical")] == ["a"]
    with pytest.raises(DocumentNotFoundError):
        ix.document("a\x00")
    assert ix.remove(["a\x00"]) == 0 and ix.remove_under(["a\x00", "b\x00"]) == 0
    assert ix.stats().documents == 2


def test_the_http_api_answers_nul_with_4xx(index_at: Callable[..., Index]) -> None:
    ix = index_at()
    client = TestClient(create_app(ix), base_url="http://localhost", raise_server_exceptions=False)
    docs = [{"id": f"t{i}", "text": f"text number {i}"} for i in range(1000)]
    docs[617]["text"] = "bad \x00 text"
    res = client.post("/documents", json={"documents": docs})
    assert res.status_code == 400 and res.json()["error"]["message"].startswith("text 617 (id 't617')")
    assert client.get("/status").json()["documents"] == 0
    assert client.post("/documents", json={"documents": docs[:617]}).status_code == 200
    assert client.get("/documents/t1%00").status_code == 404
    assert client.delete("/documents/t1%00").status_code == 404
    res = client.post("/search", json={"query": "text", "mode": "lexical", "filters": {"path_prefix": "t\x00"}})
    assert res.status_code == 200 and res.json()["hits"] == []
