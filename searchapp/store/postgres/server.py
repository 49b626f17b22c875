"""What the PostgreSQL server says of itself: its version and its extensions' (with a warning for each version
that has known wrong-result bugs), why a connection cannot write (a hot standby, a read-only transaction, a role
without the right), and the first line of its error messages."""

from __future__ import annotations

import re

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

# Known wrong-result bugs of the extensions, by the version that fixed them: (extension, fixed in, the bug).
KNOWN_BUGS: tuple[tuple[str, tuple[int, ...], str], ...] = (
    ("pg_textsearch", (1, 1, 0), "BM25 corpus statistics drift after deletes"),
    ("pg_textsearch", (1, 2, 0), "Block-Max WAND under-reports multi-term scores, and streaming standbys error or "
                                 "serve results frozen at their first access"),
    ("pg_textsearch", (1, 3, 1), "duplicate rows under concurrent writes"),
    ("vector", (0, 8, 4), "HNSW vacuum and insert races"),
)
# The extensions as status names them.
EXTENSIONS = {"vector": "pgvector", "pg_textsearch": "pg_textsearch"}
STANDBY = "the server is a hot standby (in recovery): writes go to the primary"
# SQLSTATE XX001: a relation's file shorter than its pages, which is what a standby holds of a BM25 index that
# pg_textsearch before 1.2.0 never wrote to the WAL (tests/integration/test_postgres_standby.py).
DATA_CORRUPTED = "XX001"
UNREPLICATED_BM25 = (
    "the BM25 index cannot be read on this hot standby ({reason}): pg_textsearch {version} does not write its "
    "index to the WAL, so a streaming standby holds none of it (fixed in 1.2.0); query the primary for lexical "
    "and hybrid results, and this standby for dense ones"
)


def _version_tuple(version: str) -> tuple[int, ...]:
    """``"0.8.1"`` -> ``(0, 8, 1)``; the leading numbers of a version string (``"18.6 (Debian 18.6-1)"`` -> (18, 6))."""
    found = re.match(r"[0-9]+(?:\.[0-9]+)*", version.strip())
    return tuple(int(part) for part in found.group(0).split(".")) if found else ()


def version_warnings(versions: dict[str, str | None]) -> list[str]:
    """A warning for each installed extension whose version has known wrong-result bugs, naming them and the
    version that fixes the last of them. ``versions``: extension name (``vector``, ``pg_textsearch``) -> its
    version, ``None`` when it is not installed."""
    out = []
    for ext, shown in EXTENSIONS.items():
        version = versions.get(ext)
        if not version:
            continue
        bugs = [(fixed, bug) for name, fixed, bug in KNOWN_BUGS if name == ext and _version_tuple(version) < fixed]
        if bugs:
            listed = "; ".join(f"{bug} (fixed in {'.'.join(map(str, fixed))})" for fixed, bug in bugs)
            need = ".".join(map(str, max(fixed for fixed, _ in bugs)))
            out.append(f"{shown} {version} has known wrong-result bugs: {listed}: use {shown} >= {need}")
    return out


def read_versions(conn: Connection) -> dict[str, str | None]:
    """The server's PostgreSQL version and its extensions' (``None``: not installed in this database)."""
    rows = dict(conn.execute(text("SELECT extname, extversion FROM pg_extension WHERE extname = ANY(:e)"),
                             {"e": list(EXTENSIONS)}).all())
    server = str(conn.execute(text("SHOW server_version")).scalar_one())
    return {"postgresql": server, **{ext: rows.get(ext) for ext in EXTENSIONS}}


def read_only_reason(conn: Connection, passages: str, exists: bool) -> str | None:
    """Why this connection cannot write the index, or ``None``: a hot standby, a read-only default
    transaction, or a role without the right to write its passages (``passages``: the table's qualified name,
    checked where it ``exists``)."""
    if conn.execute(text("SELECT pg_is_in_recovery()")).scalar_one():
        return STANDBY
    if conn.execute(text("SELECT current_setting('transaction_read_only')")).scalar_one() == "on":
        return "the connection is read-only (default_transaction_read_only)"
    if exists and not conn.execute(text("SELECT has_table_privilege(:t, 'INSERT')"),
                                   {"t": passages}).scalar_one():
        return f"the role {conn.execute(text('SELECT current_user')).scalar_one()} may not write the index"
    return None


def reason(exc: DBAPIError) -> str:
    """The first line of the server's or the driver's message."""
    return str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc).splitlines()[0]
