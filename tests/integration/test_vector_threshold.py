"""Where an index's vector search turns approximate, on each backend: the backend's own threshold when the settings
name none (recorded as a number when the index is made), the one given otherwise."""

from __future__ import annotations

import json

import pytest

from searchapp import Index
from searchapp.errors import ConfigError
from searchapp.store import vector_policy
from searchapp.store.vector_policy import DEFAULT_THRESHOLDS


def test_a_new_index_records_its_backends_threshold(backend: str, index_at, index_location: str) -> None:  # type: ignore[no-untyped-def]
    ix = index_at()
    assert ix.stats().to_dict()["ivf_threshold"] == DEFAULT_THRESHOLDS[backend]
    assert json.loads(ix.stores.settings()["ivf_threshold"]) == DEFAULT_THRESHOLDS[backend]
    ix.close()
    with Index(index_location) as again:
        assert again.stores.policy.threshold == DEFAULT_THRESHOLDS[backend]


def test_the_backends_default_decides_when_search_turns_approximate(  # type: ignore[no-untyped-def]
    backend: str, index_at, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(vector_policy.DEFAULT_THRESHOLDS, backend, 150)
    with index_at() as ix:
        ix.add_texts([f"rotate the signing keys number {i}" for i in range(200)], ids=[f"t{i}" for i in range(200)])
        assert ix.stats().vector_index == ("ivf" if backend == "folder" else "hnsw")
        assert [h.path for h in ix.search("signing keys number 7", k=1, mode="lexical")] == ["t7"]


def test_a_threshold_given_is_kept_on_every_backend(index_at, index_location: str) -> None:  # type: ignore[no-untyped-def]
    index_at(ivf_threshold=150).close()
    with Index.open_or_create(index_location, ivf_threshold=150) as ix:
        assert ix.stats().to_dict()["ivf_threshold"] == 150
    with pytest.raises(ConfigError, match="ivf_threshold=150"):
        Index.open_or_create(index_location, ivf_threshold=300)


def test_an_index_whose_settings_name_no_threshold_shows_its_backends(  # type: ignore[no-untyped-def]
    backend: str, index_at, index_location: str
) -> None:
    ix = index_at()
    ix.stores.put_settings({"ivf_threshold": "null"})  # as settings from before the threshold was stored read
    ix.close()
    with Index(index_location) as again:
        assert again.stats().to_dict()["ivf_threshold"] == DEFAULT_THRESHOLDS[backend]
