"""Schema migrations: from an empty database, refusal of a newer schema, shipped inside the wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from searchapp.errors import SchemaError
from searchapp.store import schema
from searchapp.store.metadata import MetadataStore

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
    MetadataStore(tmp_path / "x.db").close()
    engine = schema.make_engine(tmp_path / "x.db")
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999_future'"))
    with pytest.raises(SchemaError, match="newer searchapp"):
        MetadataStore(tmp_path / "x.db")
    engine.dispose()


@pytest.mark.slow
def test_wheel_ships_migrations(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path),
         str(ROOT)],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("searchapp-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "searchapp/migrations/env.py" in names
    assert "searchapp/migrations/versions/0001_initial.py" in names
    assert "searchapp/migrations/script.py.mako" in names
