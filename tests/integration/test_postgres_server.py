"""What a PostgreSQL index says about the server holding it, and how it serves where it may not write: the
versions at open with warnings for those with known wrong-result bugs, and an index opened on a read-only
connection or by a read-only role (every query mode, no DDL or migration, writes refused in one line)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from searchapp import Index, ReadOnlyError
from searchapp.server.app import create_app
from searchapp.store.postgres import PostgresStores, version_warnings
from tests.integration.test_postgres import MODES, write_corpus

ROOT = Path(__file__).resolve().parents[2]


def test_versions_with_known_bugs_are_warned_of_by_name_and_fixed_version() -> None:
    fixed = version_warnings({"postgresql": "18.1", "vector": "0.8.4", "pg_textsearch": "1.3.1"})
    assert fixed == [] and version_warnings({"vector": "0.10.0", "pg_textsearch": "1.10.2 (dev)"}) == []
    old = version_warnings({"postgresql": "17.0", "vector": "0.8.3", "pg_textsearch": "1.2.0"})
    assert len(old) == 2
    assert "pgvector 0.8.3" in old[0] and "HNSW vacuum and insert races (fixed in 0.8.4)" in old[0]
    assert "pg_textsearch 1.2.0" in old[1] and "duplicate rows under concurrent writes (fixed in 1.3.1)" in old[1]
    assert "drift" not in old[1] and ">= 1.3.1" in old[1]
    assert version_warnings({"vector": None, "pg_textsearch": None}) == []  # not installed: nothing to warn of


def test_status_has_the_server_versions_and_warns_of_a_faked_old_one(  # type: ignore[no-untyped-def]
    tmp_path: Path, pg_url: str, fake_encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_corpus(tmp_path / "docs")
    with Index(pg_url, create=True, encoder=fake_encoder) as ix:
        ix.ingest(tmp_path / "docs")
        with ix.stores.engine.connect() as conn:
            real = dict(conn.execute(sa.text("SELECT extname, extversion FROM pg_extension")).all())
            server = conn.execute(sa.text("SHOW server_version")).scalar_one()
        status = ix.stats().to_dict()
        assert status["postgresql_version"] == server
        assert status["pgvector_version"] == real["vector"]
        assert status["pg_textsearch_version"] == real["pg_textsearch"]
    faked = {"postgresql": "17.4", "vector": "0.8.4", "pg_textsearch": "1.3.0"}
    monkeypatch.setattr(PostgresStores, "_read_versions", lambda self, conn: faked)
    with Index(pg_url, encoder=fake_encoder) as ix:
        status = ix.stats().to_dict()
        assert status["pg_textsearch_version"] == "1.3.0" and status["pgvector_version"] == "0.8.4"
        (warning,) = status["warnings"]  # type: ignore[misc]
        assert "pg_textsearch 1.3.0" in warning and "duplicate rows under concurrent writes (fixed in 1.3.1)" in warning
        body = TestClient(create_app(ix), base_url="http://localhost").get("/status").json()
        assert body["warnings"] == [warning] and body["pg_textsearch_version"] == "1.3.0"


def _role(pg_url: str, name: str, grant: str, setting: str = "") -> str:
    """A login role with ``grant`` on the index's tables; the index's URL as that role."""
    url = sa.engine.make_url(pg_url)
    schema = str(url.query["schema"])
    engine = sa.create_engine(url.set(query={k: v for k, v in url.query.items() if k != "schema"}))
    with engine.begin() as conn:
        conn.exec_driver_sql(f"DROP ROLE IF EXISTS {name}")
        conn.exec_driver_sql(f"CREATE ROLE {name} LOGIN")
        conn.exec_driver_sql(f'GRANT USAGE ON SCHEMA "{schema}" TO {name}')
        conn.exec_driver_sql(f'GRANT {grant} ON ALL TABLES IN SCHEMA "{schema}" TO {name}')
        conn.exec_driver_sql(f'GRANT USAGE ON ALL SEQUENCES IN SCHEMA "{schema}" TO {name}')
        if setting:
            conn.exec_driver_sql(f"ALTER ROLE {name} SET {setting}")
    engine.dispose()
    return url.set(username=name).render_as_string(hide_password=False)


@pytest.mark.parametrize(("grant", "setting", "reason"), [
    ("SELECT", "", "may not write the index"),
    ("ALL", "default_transaction_read_only = on", "the connection is read-only (default_transaction_read_only)"),
])
def test_a_read_only_connection_serves_every_mode_and_refuses_writes(  # type: ignore[no-untyped-def]
    tmp_path: Path, pg_url: str, fake_encoder, grant: str, setting: str, reason: str
) -> None:
    write_corpus(tmp_path / "docs")
    with Index(pg_url, create=True, encoder=fake_encoder) as ix:
        ix.ingest(tmp_path / "docs")
        expected = {m: [h.passage_id for h in ix.search("rotate the keys", k=3, mode=m)] for m in MODES}
    url = _role(pg_url, "reader_" + grant.lower(), grant, setting)
    with Index(url, encoder=fake_encoder) as ro:  # opened as any index is: the store finds it cannot write
        for mode in MODES:
            assert [h.passage_id for h in ro.search("rotate the keys", k=3, mode=mode)] == expected[mode]
        status = ro.stats().to_dict()
        assert status["read_only"] is True and reason in str(status["read_only_reason"])
        with pytest.raises(ReadOnlyError, match=reason.replace("(", r"\(").replace(")", r"\)")):
            ro.add_texts(["a new text"], ids=["t1"])
        assert TestClient(create_app(ro), base_url="http://localhost").get("/status").json()["read_only"] is True
    run = subprocess.run([sys.executable, "-m", "searchapp", "remove", "t1", "--index", url],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode != 0 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "read-only" in run.stderr and "Traceback" not in run.stderr
