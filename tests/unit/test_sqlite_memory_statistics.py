"""SQLite's memory statistics (a process-wide mutex around every allocation) are turned off before the first
index database is opened, and never while a connection is open: in a fresh interpreter each time."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="turned off on Linux only")

PROBE = """
import ctypes, sqlite3, _sqlite3
from searchapp.store import schema
lib = ctypes.CDLL(_sqlite3.__file__)
lib.sqlite3_memory_used.restype = ctypes.c_int64
{before}
off = schema.memory_statistics_off()
conn = sqlite3.connect(":memory:")
conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
conn.execute("INSERT INTO t VALUES ('an open connection holds memory')")
print(off, lib.sqlite3_memory_used() > 0, conn.execute("SELECT count(*) FROM t WHERE t MATCH 'memory'").fetchone()[0])
"""


def _run(before: str) -> str:
    out = subprocess.run([sys.executable, "-c", PROBE.format(before=before)], capture_output=True, text=True,
                         timeout=60, check=True)
    return out.stdout.strip()


def test_off_in_a_fresh_process_and_sqlite_still_works() -> None:
    # Off: the memory in use is no longer counted, and SQLite (FTS5 included) works as before.
    assert _run("") == "True False 1"


def test_left_alone_while_a_connection_is_open() -> None:
    # A connection of the host application is open: SQLite is not shut down under it.
    assert _run("held = sqlite3.connect(':memory:')") == "False True 1"
