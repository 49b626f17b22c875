"""An index folder that cannot be written (a read-only mount, no write permission, a backup, a container volume)
is still read: ``query``, ``status``, ``export``, ``documents``, ``serve --read-only`` and ``Index(read_only=True)``,
without a write of any kind (issue: hardening, round 3).

Root writes through any permission, and CI runs as root: the in-process tests make the folder unwritable for
this process by the one check the store consults (``schema.writable``) and assert that nothing in it changes or
appears (no ``-wal``, no ``-shm``); the command test runs the commands as another user (``nobody``, where the
tests run as root) on a folder it has no write permission on.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from searchapp import Index, IndexConfig
from searchapp.cli import app
from searchapp.errors import SearchappError
from searchapp.server.app import create_app
from searchapp.store import schema

ROOT = Path(__file__).resolve().parents[2]


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    # Every file, the lexical engine's folder's too (tantivy's, a new index's default).
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


def _own_files(folder: Path) -> list[str]:
    return sorted(["index.db", "vectors.faiss", "write.lock"] + ["lexical"] * (folder / "lexical").is_dir())


@pytest.fixture()
def folder(tmp_path: Path, fake_encoder) -> Path:  # type: ignore[no-untyped-def]
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.add_texts(["rotate the signing keys every quarter", "water the tomatoes twice a week"], ids=["a", "b"])
    assert not (tmp_path / "ix" / "index.db-wal").exists()  # the writer's close checkpointed it
    return tmp_path / "ix"


@pytest.fixture()
def unwritable(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(schema, "writable", lambda path: False, raising=False)
    before = _snapshot(folder)
    yield folder
    assert _snapshot(folder) == before  # nothing written, nothing created


@pytest.mark.parametrize("read_only", [True, False])
def test_an_unwritable_folder_is_read_without_a_write(unwritable: Path, fake_encoder, read_only: bool) -> None:  # type: ignore[no-untyped-def]
    with Index(unwritable, read_only=read_only, encoder=fake_encoder) as ix:
        assert ix.stats().documents == 2
        for mode in ("lexical", "dense", "hybrid"):
            assert ix.search("signing keys", mode=mode)[0].path == "a"
        assert len(list(ix.export())) == 4
        assert [d.path for d in ix.documents()] == ["a", "b"]
        assert ix.context(1).text.startswith("rotate")
        # While open too: no -wal or -shm made beside it (a reader of a WAL database makes them where it can).
        assert sorted(p.name for p in unwritable.iterdir()) == _own_files(unwritable)
        if not read_only:
            # A write is refused in one message, the folder left as it was.
            with pytest.raises(SearchappError, match="cannot|read-only|readonly"):
                ix.add_texts(["a new text"], ids=["c"])


def test_a_read_only_server_on_an_unwritable_folder(unwritable: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with Index(unwritable, read_only=True, encoder=fake_encoder) as ix:
        client = TestClient(create_app(ix, read_only=True), base_url="http://localhost")
        assert client.get("/status").json()["documents"] == 2
        assert client.post("/search", json={"query": "tomatoes"}).json()["hits"][0]["path"] == "b"
        assert sorted(p.name for p in unwritable.iterdir()) == _own_files(unwritable)


@pytest.mark.parametrize("command", [["status"], ["query", "signing keys", "--mode", "lexical", "--json"],
                                     ["export"], ["documents", "--json"], ["documents"]])
def test_the_read_commands_on_an_unwritable_folder(unwritable: Path, command: list[str]) -> None:
    res = CliRunner().invoke(app, [*command, "--index", str(unwritable)])
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() and "Traceback" not in res.output


def test_a_write_to_an_unwritable_folder_is_one_line(unwritable: Path) -> None:
    res = CliRunner().invoke(app, ["remove", "a", "--index", str(unwritable)])
    assert res.exit_code == 2 and res.stderr.startswith("error: ") and len(res.stderr.splitlines()) == 1


def test_read_only_opens_never_set_wal_mode(folder: Path) -> None:
    # The journal pragma is a write: a read-only open leaves the database's own mode alone.
    engine = schema.make_engine(folder / "index.db", read_only=True)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA query_only").scalar() == 0
            with pytest.raises(Exception, match="readonly"):
                conn.exec_driver_sql("CREATE TABLE x (a)")
    finally:
        engine.dispose()


def test_the_commands_read_a_folder_without_write_permission(folder: Path) -> None:
    # A real permission check: as root, the commands run as nobody on a folder they cannot write.
    as_root = os.geteuid() == 0
    base = Path(tempfile.mkdtemp(prefix="ro-index-", dir="/tmp"))
    try:
        target = base / "ix"
        shutil.copytree(folder, target)
        home = base / "home"
        home.mkdir()
        for p in target.iterdir():
            p.chmod(0o444)
        target.chmod(0o555)
        base.chmod(0o755)
        home.chmod(0o777)
        before = _snapshot(target)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home), "SEARCHAPP_INDEX": str(target)}

        def drop() -> None:
            if as_root:
                os.setgid(65534)
                os.setuid(65534)

        try:
            probe = subprocess.run([sys.executable, "-c", "import searchapp"], env=env, preexec_fn=drop, cwd=base,
                                   capture_output=True, timeout=60)
        except PermissionError:
            probe = None
        if probe is None or probe.returncode != 0:
            pytest.skip("another user cannot run this interpreter and source tree (the in-process tests stand)")

        for command in (["status"], ["query", "signing keys", "--mode", "lexical", "--json"], ["export"],
                        ["documents", "--json"]):
            res = subprocess.run([sys.executable, "-m", "searchapp", *command], capture_output=True, text=True,
                                 env=env, preexec_fn=drop, cwd=base, timeout=120)
            assert res.returncode == 0, (command, res.stderr)
            assert "Traceback" not in res.stderr
        res = subprocess.run([sys.executable, "-m", "searchapp", "remove", "a"], capture_output=True, text=True,
                             env=env, preexec_fn=drop, cwd=base, timeout=120)
        assert res.returncode == 2 and res.stderr.startswith("error: ") and len(res.stderr.splitlines()) == 1
        assert _snapshot(target) == before
    finally:
        for p in [base, *base.rglob("*")]:
            if p.is_dir():
                p.chmod(0o755)
        shutil.rmtree(base)
