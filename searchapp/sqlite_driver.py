"""The SQLite library every connection of searchapp goes through: pysqlite3's where it is installed (a current
SQLite, bundled in its wheel), the standard library's ``sqlite3`` otherwise.

Why not always the standard library's: on Linux it is the distribution's SQLite (Debian 12: 3.40, built with
``SQLITE_OMIT_LOOKASIDE``, so every small allocation goes to malloc), and FTS5 allocates for every match it
scores. Scoring a 1M-passage index's matches took 1.2-1.3x as long through it as through pysqlite3's 3.51
(docs/performance.md, "The SQLite library, and the page cache"). ``pysqlite3-binary`` is a dependency where it
has wheels (Linux on x86_64, CPython 3.10 to 3.14); elsewhere, or with ``SEARCHAPP_SQLITE=stdlib``, the standard
library's module is used. An index is the same file for both (tests/integration/test_sqlite_driver.py writes
with one and reads with the other).

One library for the whole process, chosen once: two copies of SQLite with the same file open in one process
release each other's POSIX locks when one closes it (https://sqlite.org/howtocorrupt.html, section 2.2), so
nothing in searchapp opens an index database except through :func:`dbapi`.
"""

from __future__ import annotations

import os
from functools import lru_cache
from types import ModuleType

from searchapp.errors import ConfigError

ENV_SWITCH = "SEARCHAPP_SQLITE"
# The values ENV_SWITCH takes: "auto" (pysqlite3 where importable) or "stdlib".
CHOICES = ("auto", "stdlib")


@lru_cache(maxsize=1)
def dbapi() -> ModuleType:
    """The DB-API module of the SQLite library this process uses (``pysqlite3.dbapi2`` or ``sqlite3``); a
    ``SEARCHAPP_SQLITE`` that is neither of :data:`CHOICES` is a :class:`ConfigError`."""
    choice = os.environ.get(ENV_SWITCH, "auto").strip().lower() or "auto"
    if choice not in CHOICES:
        raise ConfigError(f"{ENV_SWITCH}={choice!r}: expected one of {', '.join(CHOICES)}")
    if choice == "auto":
        try:
            from pysqlite3 import dbapi2

            return dbapi2
        except ImportError:
            pass
    import sqlite3

    return sqlite3


def library_file() -> str:
    """The extension module that holds (or links) the SQLite library :func:`dbapi` calls, for ctypes."""
    if library() == "pysqlite3":
        import pysqlite3._sqlite3 as ext  # type: ignore[import-not-found]
    else:
        import _sqlite3 as ext
    return str(ext.__file__)


def library() -> str:
    """The library's name: ``pysqlite3`` or ``sqlite3``."""
    return str(dbapi().__name__.split(".")[0])


def describe() -> str:
    """Which library and SQLite version, e.g. ``pysqlite3 3.51.1`` or ``sqlite3 3.40.1``."""
    return f"{library()} {dbapi().sqlite_version}"
