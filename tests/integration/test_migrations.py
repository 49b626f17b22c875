"""Schema migrations: from an empty database, refusal of a newer schema (shipped inside the wheel:
tests/integration/test_wheel.py)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from searchapp.errors import SchemaError
from searchapp.store import schema
from searchapp.store.sqlite import SqliteRecords

ROOT = Path(__file__).resolve().parents[2]


def test_upgrade_from_empty_database_creates_schema(tmp_path: Path) -> None:
    engine = schema.make_engine(tmp_path / "x.db")
    assert schema.current_revision(engine) is None
    schema.upgrade(engine)
    assert schema.current_revision(engine) == schema.head_revision()
    tables = set(inspect(engine).get_table_names())
    assert {"settings", "documents", "passages", "passages_fts", "alembic_version"} <= tables
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
    schema.upgrade(engine)  # idempotent
    engine.dispose()


@pytest.mark.parametrize("read_only", [False, True])
def test_every_connection_gets_the_larger_page_cache(tmp_path: Path, read_only: bool) -> None:
    # BM25 reads each match's length from FTS5's docsize table: SQLite's default 2 MiB cache held a fifth of it at
    # 1M passages (schema.CACHE_KIB).
    schema.upgrade(schema.make_engine(tmp_path / "x.db"))
    engine = schema.make_engine(tmp_path / "x.db", read_only=read_only)
    with engine.connect() as first, engine.connect() as second:
        for conn in (first, second):
            assert conn.execute(text("PRAGMA cache_size")).scalar() == -schema.CACHE_KIB
    assert schema.CACHE_KIB > 2000
    engine.dispose()


def test_downgrade_then_upgrade_round_trip(tmp_path: Path) -> None:
    engine = schema.make_engine(tmp_path / "x.db")
    schema.upgrade(engine)
    from alembic import command

    with engine.begin() as conn:
        command.downgrade(schema._alembic_config(conn), "base")
    assert "passages" not in inspect(engine).get_table_names()
    schema.upgrade(engine)
    assert "passages" in inspect(engine).get_table_names()
    engine.dispose()


def test_newer_schema_is_refused_clearly(tmp_path: Path) -> None:
    SqliteRecords(tmp_path / "x.db").close()
    engine = schema.make_engine(tmp_path / "x.db")
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999_future'"))
    with pytest.raises(SchemaError, match="newer searchapp"):
        SqliteRecords(tmp_path / "x.db")
    engine.dispose()


def test_index_made_by_the_first_migration_is_upgraded_on_open_and_keeps_its_data(
    tmp_path: Path, fake_encoder  # type: ignore[no-untyped-def]
) -> None:
    from alembic import command
    from alembic.script import ScriptDirectory

    from searchapp import Index, IndexConfig

    revisions = list(ScriptDirectory.from_config(schema._alembic_config()).walk_revisions())
    first = revisions[-1].revision  # walk_revisions goes from head down to the base
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keys.txt").write_text("Rotate the signing keys every quarter.\n")
    (docs / "fruit.txt").write_text("Bananas are yellow and apples are red.\n")
    # An index as the first schema revision's searchapp wrote it: made by Alembic itself, rows written as SQL
    # against that revision's tables (today's ORM models may have more columns).
    (tmp_path / "ix").mkdir()
    engine = schema.make_engine(tmp_path / "ix" / "index.db")
    with engine.begin() as conn:
        command.upgrade(schema._alembic_config(conn), first)
    assert schema.current_revision(engine) == first
    config = IndexConfig().with_dimension(fake_encoder.dimension)
    passage_ids: dict[str, int] = {}
    with engine.begin() as conn:
        for key, value in config.to_settings().items():
            conn.execute(text("INSERT INTO settings (key, value) VALUES (:k, :v)"), {"k": key, "v": value})
        for doc_id, path in enumerate(sorted(docs.iterdir()), start=1):
            data = path.read_bytes()
            body = data.decode().strip()
            conn.execute(
                text("INSERT INTO documents (id, path, title, mtime, size, sha256, n_chars) "
                     "VALUES (:id, :path, :title, :mtime, :size, :sha, :n)"),
                {"id": doc_id, "path": str(path), "title": path.stem, "mtime": path.stat().st_mtime,
                 "size": len(data), "sha": hashlib.sha256(data).hexdigest(), "n": len(data.decode())},
            )
            vector = fake_encoder.encode([body])[0].tobytes()
            passage_ids[path.name] = 10 * doc_id  # ids as AUTOINCREMENT leaves them after deletions: not 1, 2
            conn.execute(
                text('INSERT INTO passages (id, document_id, ordinal, start, "end", n_tokens, text, vector) '
                     "VALUES (:id, :doc, 0, 0, :end, 8, :text, :vector)"),
                {"id": 10 * doc_id, "doc": doc_id, "end": len(body), "text": body, "vector": vector},
            )
            conn.execute(text("INSERT INTO passages_fts (rowid, text) VALUES (:id, :text)"),
                         {"id": 10 * doc_id, "text": body})
    before = {table: _rows(engine, table) for table in ("settings", "documents", "passages")}
    engine.dispose()

    with Index(tmp_path / "ix", encoder=fake_encoder) as ix:
        assert schema.current_revision(ix.stores.engine) == schema.head_revision()
        # Every row and column the first revision had is still there, unchanged.
        for table, rows in before.items():
            after = _rows(ix.stores.engine, table)
            assert [{k: r[k] for k in rows[0]} for r in after] == rows, table
        with ix.stores.engine.begin() as conn:  # the FTS5 index agrees with the passages it indexes
            conn.execute(text("INSERT INTO passages_fts(passages_fts, rank) VALUES('integrity-check', 1)"))
        for mode in ("lexical", "dense", "hybrid"):
            hit = ix.search("signing keys", k=1, mode=mode)[0]
            assert (hit.passage_id, Path(hit.path).name) == (passage_ids["keys.txt"], "keys.txt"), mode
        # Each document's passage count, which the listings read, counted from its passages (migration 0012).
        assert [(Path(d.path).name, d.passages) for d in ix.documents()] == [("fruit.txt", 1), ("keys.txt", 1)]
        # Its files were read by a reader from before documents.passages_version (migration 0007): read again
        # once (plain-text files now have their title as section path, so they are re-embedded), then unchanged.
        again = ix.ingest(docs)
        assert (again.unchanged, again.added, again.updated, again.removed) == (0, 0, 2, 0)
        embedded = fake_encoder.embedded
        again = ix.ingest(docs)
        assert (again.unchanged, again.added, again.updated, again.removed) == (2, 0, 0, 0)
        assert fake_encoder.embedded == embedded


def _rows(engine, table: str) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(text(f"SELECT * FROM {table} ORDER BY 1"))]


def test_an_up_to_date_index_opens_without_importing_alembic(tmp_path: Path) -> None:
    # The scripts' head read without Alembic is Alembic's own head; then opening a current index needs no Alembic.
    assert schema._scanned_head() == schema.head_revision()
    SqliteRecords(tmp_path / "x.db").close()
    probe = ("import sys; from pathlib import Path; from searchapp.store.sqlite import SqliteRecords\n"
             f"SqliteRecords(Path({str(tmp_path / 'x.db')!r})).close(); print('alembic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("statement", ["CREATE TABLE documents", "CREATE VIRTUAL TABLE passages_fts",
                                       "INSERT INTO alembic_version"])
def test_a_migration_stopped_part_way_leaves_nothing_and_the_next_open_finishes_it(
    tmp_path: Path, statement: str
) -> None:
    """Python's sqlite3 (before 3.12) opens no transaction for DDL, so each CREATE was its own commit: an ingest
    killed while creating the index left tables without a revision, and every later open failed with 'table
    settings already exists'. The migration is one transaction: stopped anywhere, it leaves an empty database."""
    from sqlalchemy import event

    engine = schema.make_engine(tmp_path / "x.db")

    @event.listens_for(engine, "before_cursor_execute")
    def _stop(conn, cursor, sql, params, context, executemany):  # type: ignore[no-untyped-def]
        if sql.lstrip().upper().startswith(statement.upper()):
            raise KeyboardInterrupt  # what a signal does between two statements

    with pytest.raises(KeyboardInterrupt):
        schema.upgrade(engine)
    engine.dispose()
    engine = schema.make_engine(tmp_path / "x.db")
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    engine.dispose()
    SqliteRecords(tmp_path / "x.db").close()
    engine = schema.make_engine(tmp_path / "x.db")
    assert schema.current_revision(engine) == schema.head_revision()
    engine.dispose()
