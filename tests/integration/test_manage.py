"""Managing an index from the command line: `documents` lists what is indexed, `ingest --force` reads every
file again."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import time
from pathlib import Path

from sqlalchemy import inspect, text
from typer.testing import CliRunner

from searchapp import Index, IndexConfig
from searchapp.cli import app
from searchapp.store import schema
from searchapp.types import ExportedDocument
from tests.conftest import SMALL_TEXTS

runner = CliRunner()


def test_documents_lists_files_and_texts_with_passages_and_sizes(  # type: ignore[no-untyped-def]
    tmp_path: Path, index_location: str, index_at, fake_model
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keys.txt").write_text("Rotate the signing keys every quarter.\n")
    with index_at() as small_index:  # the conftest's small_index, on this test's backend
        small_index.add_texts(SMALL_TEXTS, ids=[f"t{i}" for i in range(len(SMALL_TEXTS))])
    ix = index_location
    assert runner.invoke(app, ["ingest", str(docs), "-i", ix]).exit_code == 0
    out = json.loads(runner.invoke(app, ["documents", "-i", ix, "--json"]).stdout)["documents"]
    by_path = {d["path"]: d for d in out}
    f = by_path[str(docs / "keys.txt")]
    indexed_at = f["indexed_at"]
    assert isinstance(indexed_at, float) and abs(time.time() - indexed_at) < 600
    assert f == {"path": str(docs / "keys.txt"), "source": "file", "title": "keys", "passages": 1,
                 "size": len("Rotate the signing keys every quarter.\n"),
                 "mtime": os.stat(docs / "keys.txt").st_mtime, "indexed_at": indexed_at, "collection": None}
    assert by_path["t0"]["source"] == "text" and by_path["t0"]["passages"] == 1 and len(out) == 6
    assert isinstance(by_path["t0"]["indexed_at"], float)
    table = runner.invoke(app, ["documents", "-i", ix])
    assert table.exit_code == 0 and "keys.txt" in table.stdout and "39 B" in table.stdout and "t4" in table.stdout
    # Both times in local time: the file's mtime when indexed, then when it was indexed.
    local = datetime.datetime.fromtimestamp
    row = next(line for line in table.stdout.splitlines() if line.endswith("keys.txt"))
    mtime = local(os.stat(docs / "keys.txt").st_mtime).strftime("%Y-%m-%d %H:%M")
    assert f"{mtime}  {local(indexed_at).strftime('%Y-%m-%d %H:%M')}  file" in row


def test_indexed_at_is_set_when_a_document_is_written_and_kept_otherwise(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    # ``indexed_at`` is set when a document's row is written (added, content replaced) and kept otherwise (an
    # unchanged re-ingest, a new mtime alone, ``force``, a metadata-only change); ``export`` says the same.
    docs = tmp_path / "docs"
    docs.mkdir()
    ix = index_at()
    a, b = docs / "a.txt", docs / "b.txt"
    a.write_text("Rotate the signing keys every quarter.\n")
    b.write_text("Bananas are yellow and apples are red.\n")
    before = time.time()
    ix.ingest(docs)
    ix.add_texts(["A text about gardens."], ids=["t"], metadatas=[{"team": "ops"}])
    after = time.time()

    def listed() -> dict[str, float | None]:
        return {Path(d.path).name: d.indexed_at for d in ix.documents()}

    first = listed()
    assert set(first) == {"a.txt", "b.txt", "t"}
    assert all(v is not None and before <= v <= after for v in first.values()), first
    time.sleep(0.05)
    assert (ix.ingest(docs).unchanged, listed()) == (2, first)  # unchanged: kept
    st = a.stat()
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns + 5 * 10**9))  # a new mtime, same content: only touched
    assert (ix.ingest(docs).unchanged, listed()) == (2, first)
    assert ix.ingest(docs, force=True).unchanged == 2 and listed() == first  # read again, same hash: kept
    assert ix.add_texts(["A text about gardens."], ids=["t"], metadatas=[{"team": "web"}]).added == 0
    assert listed() == first  # metadata only: kept
    b.write_text("Cherries are red and plums are purple.\n")
    ix.add_texts(["Another text about gardens."], ids=["t"], metadatas=[{"team": "web"}])
    assert ix.ingest(docs).updated == 1
    again = listed()
    assert again["a.txt"] == first["a.txt"]
    assert again["b.txt"] > first["b.txt"] and again["t"] > first["t"]  # content replaced: later
    exported = {Path(r.path).name: r.indexed_at for r in ix.export() if isinstance(r, ExportedDocument)}
    assert exported == again
    assert {Path(str(r["path"])).name: r["indexed_at"] for r in (e.to_dict() for e in ix.export())
            if r["type"] == "document"} == again



def test_an_index_from_before_revision_0004_opens_and_lists_null(tmp_path: Path, fake_model) -> None:  # type: ignore[no-untyped-def]
    # An index as a revision-0003 searchapp wrote it: schema made by the migrations up to 0003, rows as SQL.
    docs = tmp_path / "docs"
    docs.mkdir()
    f = docs / "keys.txt"
    f.write_text("Rotate the signing keys every quarter.\n")
    (tmp_path / "ix").mkdir()
    engine = schema.make_engine(tmp_path / "ix" / "index.db")
    schema.upgrade(engine, target="0003")
    assert schema.current_revision(engine) == "0003"
    assert "indexed_at" not in {c["name"] for c in inspect(engine).get_columns("documents")}
    body = f.read_text().strip()
    with engine.begin() as conn:
        for key, value in IndexConfig().with_dimension(fake_model.dimension).to_settings().items():
            conn.execute(text("INSERT INTO settings (key, value) VALUES (:k, :v)"), {"k": key, "v": value})
        conn.execute(
            text("INSERT INTO documents (id, path, title, mtime, size, sha256, n_chars, metadata, source) "
                 "VALUES (1, :path, 'keys', :mtime, :size, :sha, :n, '{}', 'file')"),
            {"path": str(f), "mtime": f.stat().st_mtime, "size": f.stat().st_size,
             "sha": hashlib.sha256(f.read_bytes()).hexdigest(), "n": len(f.read_text())},
        )
        conn.execute(
            text('INSERT INTO passages (id, document_id, ordinal, start, "end", n_tokens, text, vector) '
                 "VALUES (1, 1, 0, 0, :end, 8, :text, :vector)"),
            {"end": len(body), "text": body, "vector": fake_model.encode([body])[0].tobytes()},
        )
        conn.execute(text("INSERT INTO passages_fts (rowid, text) VALUES (1, :text)"), {"text": body})
    engine.dispose()

    ix = str(tmp_path / "ix")
    out = runner.invoke(app, ["documents", "-i", ix, "--json"])
    assert out.exit_code == 0, out.output
    [doc] = json.loads(out.stdout)["documents"]
    assert doc["path"] == str(f) and doc["indexed_at"] is None  # unknown, not made up
    with Index(ix) as opened:
        assert schema.current_revision(opened.stores.engine) == schema.head_revision()
    table = runner.invoke(app, ["documents", "-i", ix])
    row = next(line for line in table.stdout.splitlines() if line.endswith("keys.txt"))
    assert row.split()[-3:-1] == ["-", "file"]
    [exported] = [json.loads(line) for line in runner.invoke(app, ["export", "-i", ix]).stdout.splitlines()
                  if json.loads(line)["type"] == "document"]
    assert exported["indexed_at"] is None
    # Made by a reader from before documents.passages_version (migration 0007): read again once, and indexed
    # now (its plain text gains its title as section path); then unchanged, and its time as it was.
    assert json.loads(runner.invoke(app, ["ingest", str(docs), "-i", ix, "--json"]).stdout)["updated"] == 1
    [now] = json.loads(runner.invoke(app, ["documents", "-i", ix, "--json"]).stdout)["documents"]
    assert now["indexed_at"] is not None
    assert json.loads(runner.invoke(app, ["ingest", str(docs), "-i", ix, "--json"]).stdout)["unchanged"] == 1
    assert json.loads(runner.invoke(app, ["documents", "-i", ix, "--json"]).stdout)["documents"][0][
        "indexed_at"] == now["indexed_at"]  # an unchanged re-ingest keeps the time it was indexed


def test_ingest_force_reads_a_file_whose_size_and_mtime_did_not_change(tmp_path: Path, fake_model) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    f = docs / "notes.txt"
    f.write_text("alpha bravo charlie\n")
    assert runner.invoke(app, ["ingest", str(docs)]).exit_code == 0
    st = os.stat(f)
    f.write_text("delta bravo charlie\n")  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    plain = json.loads(runner.invoke(app, ["ingest", str(docs), "--json"]).stdout)
    assert (plain["unchanged"], plain["updated"]) == (1, 0)
    forced = json.loads(runner.invoke(app, ["ingest", str(docs), "--force", "--json"]).stdout)
    assert (forced["unchanged"], forced["updated"]) == (0, 1)
    hits = json.loads(runner.invoke(app, ["query", "delta", "--mode", "lexical", "--json"]).stdout)["hits"]
    assert [Path(h["path"]).name for h in hits] == ["notes.txt"]
    again = json.loads(runner.invoke(app, ["ingest", str(docs), "--force", "--json"]).stdout)
    assert (again["unchanged"], again["passages_embedded"]) == (1, 0)  # re-read, same hash: not re-embedded


def test_human_size() -> None:
    from searchapp.cli.common import human_size

    assert [human_size(n) for n in (0, 1023, 1024, 1536, 5 * 2**20, 3 * 2**40)] == [
        "0 B", "1023 B", "1.0 KiB", "1.5 KiB", "5.0 MiB", "3.0 TiB",
    ]
