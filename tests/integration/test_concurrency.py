"""Another process queries the index while an ingest writes to it (WAL: readers are never locked out)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from searchapp import Index


@pytest.mark.slow
def test_queries_succeed_while_another_process_ingests(tmp_path: Path, real_encoder) -> None:  # type: ignore[no-untyped-def]
    first = tmp_path / "first"
    first.mkdir()
    (first / "seed.txt").write_text("The seed document talks about rotating signing keys.\n")
    with Index(tmp_path / "ix", create=True, encoder=real_encoder) as ix:
        ix.ingest(first)
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(400):
        (docs / f"d{i:03d}.txt").write_text(f"Document {i} is about topic {i % 13}. " * 20 + "\n")
    writer = subprocess.Popen(
        [sys.executable, "-m", "searchapp", "ingest", str(docs), "--index", str(tmp_path / "ix"), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    queries = 0
    last = 1
    try:
        with Index(tmp_path / "ix") as reader:
            # Every query, before, during and right after the writer's commit, must succeed and see a
            # consistent index: never "database is locked", never a half-written state.
            while writer.poll() is None:
                hits = reader.search("signing keys", k=3, mode="lexical")
                assert hits and Path(hits[0].path).name == "seed.txt"
                documents = reader.stats().documents
                assert last <= documents <= 401  # whole committed batches only, never going back
                last = documents
                queries += 1
                time.sleep(0.05)
    finally:
        out, err = writer.communicate(timeout=600)
    assert writer.returncode == 0, err
    assert queries > 5
    with Index(tmp_path / "ix") as ix:
        assert ix.stats().documents == 401


def test_second_writer_in_another_process_is_refused(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Some text.\n")
    with Index(tmp_path / "ix", create=True, encoder=fake_encoder) as ix, ix.writing():
        res = subprocess.run(
            [sys.executable, "-m", "searchapp", "ingest", str(tmp_path / "docs"), "--index", str(tmp_path / "ix")],
            capture_output=True, text=True, timeout=300,
        )
    assert res.returncode == 2
    assert "another process is writing" in res.stderr and "Traceback" not in res.stderr
