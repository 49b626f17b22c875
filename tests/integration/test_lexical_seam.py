"""The folder backend's lexical index is behind one interface (store/lexical_index.py): an engine registered by
one line of ENGINES is the one the record transactions keep in step and every read session asks, with nothing
above store/ naming it."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from searchapp import Index, IndexConfig
from searchapp.store import lexical, lexical_index
from tests.conftest import SMALL_TEXTS

PACKAGE = Path(__file__).resolve().parents[2] / "searchapp"
CALLS: list[str] = []


class Recording(lexical.Fts5Index):
    """FTS5 under another name, recording what it is asked."""

    name = "recording"

    def add(self, conn: Any, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> None:
        CALLS.append(f"add {len(ids)}")
        super().add(conn, ids, texts, sections)

    def remove(self, conn: Any, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> None:
        CALLS.append(f"remove {len(ids)}")
        super().remove(conn, ids, texts, sections)

    def session(self, context: lexical_index.SessionContext) -> lexical.Fts5Session:
        CALLS.append("session")
        return super().session(context)


def test_an_engine_registered_in_one_line_is_the_one_written_and_read(tmp_path: Path, fake_encoder: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    expected = {}
    monkeypatch.setattr(lexical_index, "DEFAULT", "fts5")  # Recording wraps FTS5: its scores are FTS5's
    with Index(tmp_path / "fts5", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.add_texts(SMALL_TEXTS, ids=[f"t{i}" for i in range(len(SMALL_TEXTS))])
        for mode in ("lexical", "hybrid"):
            expected[mode] = [(h.passage_id, h.score) for h in ix.search("signing keys", mode=mode)]
    monkeypatch.setitem(lexical_index.ENGINES, "recording", f"{__name__}:Recording")
    monkeypatch.setattr(lexical_index, "DEFAULT", "recording")
    CALLS.clear()
    with Index(tmp_path / "other", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.add_texts(SMALL_TEXTS, ids=[f"t{i}" for i in range(len(SMALL_TEXTS))])
        assert CALLS == [f"add {len(SMALL_TEXTS)}"]
        for mode in ("lexical", "hybrid"):
            assert [(h.passage_id, h.score) for h in ix.search("signing keys", mode=mode)] == expected[mode]
        assert CALLS.count("session") == 2
        assert ix.remove(["t1"]) == 1
        assert CALLS[-1] == "remove 1"
        assert "t1" not in {h.path for h in ix.search("signing keys expire", mode="lexical")}


def test_nothing_above_store_names_a_lexical_engine() -> None:
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("store/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
                assert not names & {"searchapp.store.lexical", "searchapp.store.lexical_index"}, rel
