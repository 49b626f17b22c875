"""The tantivy lexical engine (store/tantivy_lexical.py), opted into by the registry's default: it answers as the
folder backend's lexical side (search, filters, hybrid candidates, IDF), follows every write, and is derived data:
a hand-deleted or stale index (a kill between the records' commit and its own) is rebuilt from the stored
passages on the next read."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

pytest.importorskip("tantivy")

from searchapp import Filter, Index, IndexConfig  # noqa: E402
from searchapp.cli import app  # noqa: E402
from searchapp.errors import ConfigError, ReadOnlyError  # noqa: E402
from searchapp.store import lexical_index  # noqa: E402
from searchapp.store.tantivy_lexical import FOLDER, TantivyIndex  # noqa: E402
from tests.conftest import SMALL_TEXTS  # noqa: E402

IDS = [f"t{i}" for i in range(len(SMALL_TEXTS))]
runner = CliRunner()


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


def _fts5_rows(ix: Index) -> int:
    with ix.stores.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM passages_fts_docsize")).scalar_one())


def test_an_index_moves_between_engines_and_answers_alike(tmp_path: Path, fake_encoder: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical_index, "DEFAULT", "fts5")  # an index made before tantivy was the default
    path = tmp_path / "ix"
    queries = ("signing keys", "rotate", "garden shed keys")
    with Index(path, create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.add_texts(SMALL_TEXTS, ids=IDS)
        before = {q: set(_lexical(ix, q)) for q in queries}
        assert _fts5_rows(ix) == len(SMALL_TEXTS)
    monkeypatch.undo()
    res = runner.invoke(app, ["lexical-engine", "tantivy", "--index", str(path), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert set(out) == {"lexical_engine", "previous", "passages", "lexical_bytes", "seconds"}
    assert (out["lexical_engine"], out["previous"], out["passages"]) == ("tantivy", "fts5", len(SMALL_TEXTS))
    assert "moving the lexical index" in res.stderr
    with Index(path, encoder=fake_encoder) as ix:
        assert ix.stats().facts["lexical_engine"] == "tantivy" and _fts5_rows(ix) == 0  # FTS5's data gone
        assert {q: set(_lexical(ix, q)) for q in queries} == before
        ix.add_texts(["Signing keys rotate on the first of each month."], ids=["new"])  # written to tantivy now
        assert "new" in _lexical(ix, "signing month")
        assert ix.use_lexical_engine("tantivy") == 0  # already
        assert ix.use_lexical_engine("fts5") == len(SMALL_TEXTS) + 1
        assert not (path / FOLDER).exists() and _fts5_rows(ix) == len(SMALL_TEXTS) + 1
        assert "new" in _lexical(ix, "signing month")
        with pytest.raises(ConfigError, match="no lexical engine 'bm42'"):
            ix.use_lexical_engine("bm42")
    with Index(path, read_only=True, encoder=fake_encoder) as ix, pytest.raises(ReadOnlyError):
        ix.use_lexical_engine("tantivy")


def test_where_tantivy_is_missing_its_index_says_so_in_one_line_and_moves_to_fts5(
        tmp_path: Path, fake_encoder: Any, tantivy_default: None, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ix"
    with Index(path, create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.add_texts(SMALL_TEXTS, ids=IDS)
        expected = _lexical(ix, "signing keys")
    monkeypatch.setitem(sys.modules, "tantivy", None)  # as on a platform without its wheel: import fails
    with Index(path, encoder=fake_encoder) as ix:
        assert ix.search("signing keys", mode="dense")  # the vectors answer without it
        with pytest.raises(ConfigError, match="lexical engine is tantivy, which is not installed") as err:
            ix.search("signing keys", mode="lexical")
        assert "\n" not in str(err.value) and "searchapp lexical-engine fts5" in str(err.value)
    res = runner.invoke(app, ["lexical-engine", "fts5", "--index", str(path)])
    assert res.exit_code == 0, res.output
    with Index(path, encoder=fake_encoder) as ix:
        assert _lexical(ix, "signing keys") == expected
