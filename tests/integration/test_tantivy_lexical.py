"""The tantivy lexical engine (store/tantivy_lexical.py), opted into by the registry's default: it answers as the
folder backend's lexical side (search, filters, hybrid candidates, IDF), follows every write, and is derived data:
a hand-deleted or stale index (a kill between the records' commit and its own) is rebuilt from the stored
passages on the next read."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tantivy")

from searchapp import Filter, Index, IndexConfig  # noqa: E402
from searchapp.store import lexical_index  # noqa: E402
from searchapp.store.tantivy_lexical import FOLDER, TantivyIndex  # noqa: E402
from tests.conftest import SMALL_TEXTS  # noqa: E402

IDS = [f"t{i}" for i in range(len(SMALL_TEXTS))]


@pytest.fixture()
def tantivy_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical_index, "DEFAULT", "tantivy")


def _lexical(ix: Index, query: str, **kw: Any) -> list[str]:
    return [h.path for h in ix.search(query, mode="lexical", **kw)]


def test_it_answers_as_the_lexical_side(tmp_path: Path, fake_encoder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with Index(tmp_path / "fts5", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.add_texts(SMALL_TEXTS, ids=IDS, metadatas=[{"team": "a" if i % 2 else "b"} for i in range(len(IDS))])
        expected = {q: set(_lexical(ix, q)) for q in ("signing keys", "rotate", "garden shed keys", "the")}
    monkeypatch.setattr(lexical_index, "DEFAULT", "tantivy")
    with Index(tmp_path / "tv", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.add_texts(SMALL_TEXTS, ids=IDS, metadatas=[{"team": "a" if i % 2 else "b"} for i in range(len(IDS))])
        assert ix.stats().facts["lexical_engine"] == "tantivy" and ix.stats().facts["lexical_bytes"] > 0
        for query, found in expected.items():
            assert set(_lexical(ix, query)) == found, query  # the same analysis: the same passages match
        assert _lexical(ix, "rotating")[0] == "t0"  # Porter stems, as FTS5's
        team = _lexical(ix, "keys", filters=Filter(metadata={"team": ["a"]}))
        assert team and all(int(t[1:]) % 2 for t in team)
        hybrid = ix.search("rotate the signing keys", mode="hybrid", explain=True)
        assert hybrid[0].explain is not None and hybrid[0].lexical_score is not None
        assert ix.remove(["t0"]) == 1
        assert "t0" not in _lexical(ix, "rotate signing keys")
        ix.add_texts(["Signing keys rotate on the first of each month."], ids=["new"])
        assert "new" in _lexical(ix, "signing month")


def test_a_deleted_or_stale_index_is_rebuilt_from_the_passages(tmp_path: Path, fake_encoder: Any,
                                                               tantivy_default: None,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ix"
    with Index(path, create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.add_texts(SMALL_TEXTS, ids=IDS)
        before = _lexical(ix, "signing keys")
    shutil.rmtree(path / FOLDER)
    with Index(path, encoder=fake_encoder) as ix:
        assert _lexical(ix, "signing keys") == before
    # A kill after the records' commit and before the lexical index's: its commit never happens.
    monkeypatch.setattr(TantivyIndex, "committed", lambda self: setattr(self, "_staged", []))
    with Index(path, encoder=fake_encoder) as ix:
        ix.add_texts(["Signing keys rotate on the first of each month."], ids=["new"])
    monkeypatch.undo()
    monkeypatch.setattr(lexical_index, "DEFAULT", "tantivy")
    with Index(path, encoder=fake_encoder) as ix:
        assert "new" in _lexical(ix, "signing month")
