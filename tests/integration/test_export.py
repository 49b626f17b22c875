"""`searchapp export`: documents then passages as JSON lines, from one snapshot, in both backends."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from searchapp import Index
from searchapp.cli import app
from tests.conftest import SMALL_TEXTS, small_fetches

runner = CliRunner()


def check_export(ix: Index, vectors: bool) -> list[dict[str, object]]:
    """The exported rows agree with what the index holds: every document, then every passage by id, each
    passage's text at its span, and its vector the stored one."""
    rows = [r.to_dict() for r in ix.export(vectors=vectors)]
    kinds = [r["type"] for r in rows]
    n_docs = kinds.count("document")
    assert kinds == ["document"] * n_docs + ["passage"] * (len(rows) - n_docs)  # documents first
    docs, passages = rows[:n_docs], rows[n_docs:]
    assert [d["path"] for d in docs] == sorted(d.path for d in ix.documents())
    assert [p["id"] for p in passages] == sorted(ix.stores.passage_documents())
    assert {p["id"]: p["path"] for p in passages} == ix.stores.passage_documents()
    for p in passages:
        assert ix.document(str(p["path"])).text[int(p["start"]) : int(p["end"])] == p["text"]
        assert ("vector" in p) == vectors
    return rows


def test_cli_export_streams_json_lines_that_match_the_index(tmp_path: Path, small_index, fake_model) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keys.txt").write_text("Rotate the signing keys every quarter.\n")
    small_index.add_texts(["Tagged text about gardens."], ids=["tagged"], metadatas=[{"team": "ops"}])
    expected = check_export(small_index, vectors=True)
    small_index.close()
    ix = str(tmp_path / "ix")
    assert runner.invoke(app, ["ingest", str(docs), "-i", ix]).exit_code == 0

    out = runner.invoke(app, ["export", "-i", ix])
    assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in out.stdout.splitlines()]  # one object per line
    by_path = {r["path"]: r for r in rows if r["type"] == "document"}
    f = docs / "keys.txt"
    assert by_path[str(f)] == {"type": "document", "path": str(f), "source": "file", "title": "keys",
                               "metadata": {}, "size": f.stat().st_size, "mtime": f.stat().st_mtime,
                               "sha256": by_path[str(f)]["sha256"], "indexed_at": by_path[str(f)]["indexed_at"]}
    assert isinstance(by_path[str(f)]["indexed_at"], float)  # when it was indexed: seconds since the epoch
    assert by_path["tagged"]["metadata"] == {"team": "ops"} and by_path["tagged"]["source"] == "text"
    key_passage = next(r for r in rows if r["type"] == "passage" and r["path"] == str(f))
    assert set(key_passage) == {"type", "id", "path", "section", "start", "end", "text"}  # no vector unless asked
    assert key_passage["text"] == "Rotate the signing keys every quarter."

    lines = runner.invoke(app, ["export", "-i", ix, "--vectors"]).stdout.splitlines()
    with_vectors = [json.loads(line) for line in lines]
    old = {r["id"]: r["vector"] for r in expected if r["type"] == "passage"}
    for r in with_vectors:
        if r["type"] == "passage" and r["id"] in old:
            # The stored float32 vector exactly, as a list of floats.
            assert np.array_equal(np.float32(r["vector"]), np.float32(old[r["id"]]))
            assert len(r["vector"]) == 64


def test_export_reads_one_snapshot_while_a_writer_goes_on(index_at, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Several fetches, so a later one would see the writer's rows were the reads not one snapshot.
    small_index = index_at()
    small_index.add_texts(SMALL_TEXTS, ids=[f"t{i}" for i in range(len(SMALL_TEXTS))])
    small_fetches(monkeypatch)
    stream = small_index.export()
    first = next(stream)
    small_index.add_texts(["A text added while the export runs."], ids=["late"])
    rest = list(stream)
    paths = {r.path for r in [first, *rest]}
    assert "late" not in paths and {"t0", "t4"} <= paths
    assert "late" in {r.path for r in small_index.export()}


def test_export_rows_and_their_snapshot(index_at) -> None:  # type: ignore[no-untyped-def]
    with index_at() as ix:
        ix.add_texts(["Signing keys rotate.", "Tomatoes want water.\n\nSecond passage here."], ids=["a", "b"],
                     metadatas=[{"k": 1}, {}])
        rows = check_export(ix, vectors=True)
        stream = ix.export()
        next(stream)
        ix.add_texts(["Added meanwhile."], ids=["late"])
        assert "late" not in {r.path for r in stream}
    assert [r["metadata"] for r in rows if r["type"] == "document"] == [{"k": 1}, {}]
    vec = next(r["vector"] for r in rows if r["type"] == "passage")
    assert len(vec) == 64 and abs(float(np.linalg.norm(vec)) - 1) < 1e-5


def test_export_of_a_missing_index_is_one_line(tmp_path: Path) -> None:
    out = runner.invoke(app, ["export", "-i", str(tmp_path / "nothing")])
    assert out.exit_code == 2 and out.stderr.startswith("error: no index at") and out.stdout == ""
