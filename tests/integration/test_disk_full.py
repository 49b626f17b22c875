"""A full disk during an ingest: a typed error (one line from the CLI, exit status 2), the index as it was before the
write that failed, and a later ingest that completes.

SQLite reports ENOSPC from the OS as SQLITE_FULL ("database or disk is full"); the tests get that very error
from SQLite itself by capping the database's size (``PRAGMA max_page_count``) at the start of the chosen write
transaction. For the vector file they inject ``OSError(ENOSPC)`` at the fsync, and the error FAISS raises when
a write runs out of space (obtained by writing to ``/dev/full``) after half the file is written.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import faiss
import pytest
from sqlalchemy import Engine, event, text
from typer.testing import CliRunner

from searchapp import Index, IndexConfig
from searchapp.cli import app
from searchapp.errors import StorageError
from searchapp.ingest import pipeline
from searchapp.store import vectors as vectors_module
from searchapp.store.folder import VECTORS_NAME
from searchapp.store.sqlite import SqliteRecords
from tests.consistency import assert_vectors_match_database, check_lexical
from tests.fakes import PROGRESS

TOPICS = ["keys", "tomatoes", "rivers", "engines", "violins", "glaciers", "markets", "comets"]


def write_docs(root: Path, topics: list[str], version: str = "first", notes: int = 40) -> None:
    """A few kilobytes per document, so that every batch needs new database pages."""
    root.mkdir(exist_ok=True)
    for topic in topics:
        body = " ".join(f"The {version} note {i} about {topic} details {topic} number {i}." for i in range(notes))
        (root / f"{topic}.txt").write_text(f"{body}\n")


class SqliteFull:
    """Makes the ``fail_at``-th ``SqliteRecords.write_rows`` from now on run out of space; records the database's
    state before every write."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fail_at: int) -> None:
        self.fail_at = fail_at
        self.calls = 0
        self.armed = False
        self.before: list[dict[str, Any]] = []
        real_write = SqliteRecords.write_rows

        def write(store: SqliteRecords, remove: Any, add: Any) -> Any:
            self.calls += 1
            self.before.append(snapshot(store))
            self.armed = self.calls == self.fail_at
            try:
                return real_write(store, remove, add)
            finally:
                if self.armed:
                    store.engine.dispose()  # closes the capped connection; later ones write normally
                self.armed = False

        monkeypatch.setattr(SqliteRecords, "write_rows", write)

    def on_begin(self, conn: Any) -> None:
        if self.armed:
            raw = conn.connection.dbapi_connection
            pages = raw.execute("PRAGMA page_count").fetchone()[0]
            raw.execute(f"PRAGMA max_page_count = {pages}")


@pytest.fixture()
def sqlite_full(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    made: list[SqliteFull] = []

    def make(fail_at: int) -> SqliteFull:
        full = SqliteFull(monkeypatch, fail_at)
        event.listen(Engine, "begin", full.on_begin)
        made.append(full)
        return full

    yield make
    for full in made:
        event.remove(Engine, "begin", full.on_begin)


def snapshot(store: SqliteRecords) -> dict[str, Any]:
    """Every row of documents and passages (vectors included); the lexical index checked against the passages."""
    with store.engine.begin() as conn:
        check_lexical(store, conn)
        return {
            table: [tuple(r) for r in conn.execute(text(f"SELECT * FROM {table} ORDER BY id"))]
            for table in ("documents", "passages")
        }


def names(hits: list[Any]) -> list[str]:
    return [Path(h.path).name for h in hits]


def test_full_database_mid_ingest_leaves_the_index_as_before_that_batch(
    tmp_path: Path, fake_encoder, sqlite_full, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, TOPICS[:3])
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.ingest(docs)
        before_run = snapshot(ix.stores)
        write_docs(docs, TOPICS[3:])
        write_docs(docs, ["keys"], version="second", notes=120)  # longer: the pages it frees are not enough
        # One document per batch, in file order: comets, engines, glaciers, then keys, whose batch fails; it
        # would have removed the first version of keys.txt and added the second, in one transaction.
        monkeypatch.setattr(pipeline, "FLUSH_PASSAGES", 2)
        full = sqlite_full(fail_at=4)
        with pytest.raises(StorageError, match="database or disk is full") as caught:
            ix.ingest(docs)
        assert isinstance(caught.value, OSError)
        assert full.calls == 4
        after = snapshot(ix.stores)
        # Exactly the state before the failed batch: the three batches before it kept, nothing of it written.
        assert after == full.before[3]
        assert len(after["documents"]) == len(before_run["documents"]) + 3
        assert_vectors_match_database(ix)  # the open index too: no vector of the failed batch
        for mode in ("lexical", "dense", "hybrid"):
            assert names(ix.search("first note about keys", k=1, mode=mode)) == ["keys.txt"], mode
    with Index(tmp_path / "ix", encoder=fake_encoder) as ix:  # reopened: the vector file is checked, rebuilt
        assert snapshot(ix.stores) == after
        assert_vectors_match_database(ix)
        full.fail_at = 0  # space again
        done = ix.ingest(docs)
        assert done.failed == 0
        assert_vectors_match_database(ix)
        assert "second note" in ix.search("second note about keys", k=1, mode="lexical")[0].text
        final = snapshot(ix.stores)
    # The same documents and passages as an ingest that never failed.
    with Index(tmp_path / "clean", create=True, config=IndexConfig(), encoder=fake_encoder) as clean:
        clean.ingest(docs)
        expected = snapshot(clean.stores)
    assert _content(final) == _content(expected)


def _content(state: dict[str, Any]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Documents (path, sha256) and passages (path, ordinal, start, end, text), ids aside."""
    path_of = {row[0]: row[1] for row in state["documents"]}
    docs = sorted((row[1], row[5]) for row in state["documents"])
    passages = sorted((path_of[row[1]], *row[2:5], row[6]) for row in state["passages"])
    return docs, passages


def _fsync_enospc(monkeypatch: pytest.MonkeyPatch) -> None:
    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(vectors_module.os, "fsync", fsync)


def _faiss_write_enospc(monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = faiss.write_index

    def write_index(index: Any, path: str) -> None:
        real_write(index, path)
        with open(path, "r+b") as fh:  # half the file reached the disk
            fh.truncate(os.path.getsize(path) // 2)
        real_write(index, "/dev/full")  # raises FAISS's own error for a write that ran out of space

    monkeypatch.setattr(vectors_module.faiss, "write_index", write_index)


INJECTIONS = {"fsync": _fsync_enospc, "faiss-write": _faiss_write_enospc}


@pytest.mark.parametrize("where", sorted(INJECTIONS))
def test_full_disk_writing_the_vector_file_keeps_the_previous_file(
    tmp_path: Path, fake_encoder, monkeypatch: pytest.MonkeyPatch, where: str  # type: ignore[no-untyped-def]
) -> None:
    if where == "faiss-write" and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    docs = tmp_path / "docs"
    write_docs(docs, TOPICS[:3])
    vector_file = tmp_path / "ix" / VECTORS_NAME
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.ingest(docs)
        previous = vector_file.read_bytes()
        write_docs(docs, TOPICS[3:])
        with monkeypatch.context() as m:
            INJECTIONS[where](m)
            with pytest.raises(StorageError, match="cannot write the vector file: No space left on device"):
                ix.ingest(docs)
        assert vector_file.read_bytes() == previous
        assert [p.name for p in vector_file.parent.iterdir() if p.name.endswith(".tmp")] == []
        committed = snapshot(ix.stores)
    assert len(committed["documents"]) == len(TOPICS)  # the batches reached SQLite before the file write
    with Index(tmp_path / "ix", encoder=fake_encoder) as ix:
        assert_vectors_match_database(ix)  # the stale file is noticed and rebuilt from SQLite
        assert names(ix.search("note about comets", k=1, mode="dense")) == ["comets.txt"]
        again = ix.ingest(docs)
        assert (again.unchanged, again.passages_embedded) == (len(TOPICS), 0)
    assert faiss.read_index(str(vector_file)).ntotal == len(committed["passages"])


@pytest.mark.parametrize("where", ["database", "vector-file"])
def test_cli_reports_a_full_disk_in_one_line_and_fails(
    tmp_path: Path, real_encoder, sqlite_full, monkeypatch: pytest.MonkeyPatch, where: str  # type: ignore[no-untyped-def]
) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, TOPICS[:2])
    assert CliRunner().invoke(app, ["ingest", str(docs)]).exit_code == 0
    write_docs(docs, TOPICS[2:4])
    if where == "database":
        sqlite_full(fail_at=1)
    else:
        _fsync_enospc(monkeypatch)
    res = CliRunner().invoke(app, ["ingest", str(docs)])
    assert res.exit_code == 2
    assert "Traceback" not in res.output
    # Besides progress lines, one line: the error.
    lines = [line for line in res.stderr.splitlines() if line.strip() and not line.startswith(PROGRESS)]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert ("database or disk is full" if where == "database" else "No space left on device") in lines[0]


def test_the_vectors_precision_is_recorded_even_when_a_later_batch_hits_a_full_disk(
    tmp_path: Path, fake_encoder, sqlite_full, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    # It was recorded after the run: a run cut short by a full disk left the committed vectors' precision null
    # for good (hardening, round 3).
    fake_encoder.precision = "fp32"
    docs = tmp_path / "docs"
    write_docs(docs, TOPICS[:3])
    monkeypatch.setattr(pipeline, "FLUSH_PASSAGES", 2)
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        sqlite_full(fail_at=2)
        with pytest.raises(StorageError):
            ix.ingest(docs)
        assert ix.stats().documents == 1  # the first batch is committed
    with Index(tmp_path / "ix", encoder=fake_encoder) as ix:
        assert ix.stats().vectors_precision == ("fp32",)
