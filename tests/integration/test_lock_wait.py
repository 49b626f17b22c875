"""`--wait SECONDS` (``Index(lock_wait=...)``): a writer waits for another process's writer lock instead of failing at
once, in a folder (flock) and in PostgreSQL (advisory lock)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from typer.testing import CliRunner

from searchapp import ConfigError, Index, IndexConfig, IndexLockedError
from searchapp.cli import app

runner = CliRunner()
HOLD_S = 1.5

HOLDER = r"""
import sys, time
from searchapp import Index
with Index(sys.argv[1]) as ix, ix.writing():
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
print("released", flush=True)
"""


@contextmanager
def held_by_another_process(location: str) -> Iterator[subprocess.Popen[str]]:
    """Another process holds the index's writer lock for ``HOLD_S`` seconds from when this block starts."""
    child = subprocess.Popen([sys.executable, "-c", HOLDER, location, str(HOLD_S)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held", child.stderr
        yield child
    finally:
        child.wait(timeout=60)


def test_cli_remove_waits_for_the_lock_with_wait_and_fails_at_once_without(small_index) -> None:  # type: ignore[no-untyped-def]
    location = str(small_index.location)
    small_index.close()
    with held_by_another_process(location):
        started = time.monotonic()
        refused = runner.invoke(app, ["remove", "t0", "-i", location])
        assert refused.exit_code == 2 and time.monotonic() - started < 1.0
        assert refused.stderr.strip().endswith("another process is writing to this index")
        short = runner.invoke(app, ["remove", "t0", "-i", location, "--wait", "0.2"])
        assert short.exit_code == 2 and "(waited 0.2s for it)" in short.stderr
        waited = runner.invoke(app, ["remove", "t0", "-i", location, "--wait", "30"])
        assert waited.exit_code == 0, waited.output
        assert waited.stdout.strip().splitlines() == ["removed t0", "removed 1"]
        assert time.monotonic() - started >= HOLD_S * 0.8  # it did wait for the other process


def test_ingest_waits_for_the_lock(tmp_path, small_index, fake_model) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Waited for the lock.")
    location = str(small_index.location)
    small_index.close()
    with held_by_another_process(location):
        out = runner.invoke(app, ["ingest", str(docs), "-i", location, "--wait", "30", "--json"])
    assert out.exit_code == 0, out.output


def test_postgres_writer_waits_for_the_advisory_lock(pg_url: str, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with Index(pg_url, create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.add_texts(["first text"], ids=["a"])
    with held_by_another_process(pg_url):
        with Index(pg_url, encoder=fake_encoder) as ix, pytest.raises(IndexLockedError, match="another process"):
            ix.add_texts(["refused at once"], ids=["b"])
        started = time.monotonic()
        with Index(pg_url, encoder=fake_encoder, lock_wait=30) as ix:
            assert ix.add_texts(["waited for"], ids=["c"]).added == 1
        assert time.monotonic() - started >= HOLD_S * 0.5


def test_lock_wait_is_checked() -> None:
    with pytest.raises(ConfigError, match="lock_wait must be"):
        Index("ix", create=True, lock_wait=-1)
