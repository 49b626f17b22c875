"""SQLite's memory statistics (a process-wide mutex around every allocation) are turned off before the first
index database is opened, and never while a connection is open: in a fresh interpreter each time, for each
library searchapp may connect through (``sqlite_driver``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from searchapp.sqlite_driver import ENV_SWITCH

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="turned off on Linux only")

PROBE = """
import ctypes
from searchapp.sqlite_driver import dbapi, library_file
from searchapp.store import schema
sqlite3 = dbapi()
lib = ctypes.CDLL(library_file())
lib.sqlite3_memory_used.restype = ctypes.c_int64
{before}
off = schema.memory_statistics_off()
conn = sqlite3.connect(":memory:")
conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
conn.execute("INSERT INTO t VALUES ('an open connection holds memory')")
print(off, lib.sqlite3_memory_used() > 0, conn.execute("SELECT count(*) FROM t WHERE t MATCH 'memory'").fetchone()[0])
"""


LIBRARIES = ["auto", "stdlib"]


def _run(before: str, library: str) -> str:
    env = {**os.environ, ENV_SWITCH: library}
    out = subprocess.run([sys.executable, "-c", PROBE.format(before=before)], capture_output=True, text=True,
                         timeout=60, check=True, env=env)
    return out.stdout.strip()


@pytest.mark.parametrize("library", LIBRARIES)
def test_off_in_a_fresh_process_and_sqlite_still_works(library: str) -> None:
    # Off: the memory in use is no longer counted, and SQLite (FTS5 included) works as before.
    assert _run("", library) == "True False 1"


@pytest.mark.parametrize("library", LIBRARIES)
def test_left_alone_while_a_connection_is_open(library: str) -> None:
    # A connection of the host application is open: SQLite is not shut down under it.
    assert _run("held = sqlite3.connect(':memory:')", library) == "False True 1"
