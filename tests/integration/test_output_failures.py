"""Results that cannot be written end every command the same way: exit status 2, and one ``error:`` line on stderr
for a full disk or a closed stdout (none for a reader that left, ``| head``); an unknown URL parameter is one line
too (issue: hardening, round 3; docs/cli.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from searchapp import Index, IndexConfig
from searchapp.cli import app
from searchapp.cli.common import run

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [
    ["export"], ["status"], ["status", "--json"], ["documents"], ["documents", "--json"],
    ["query", "hello", "--mode", "lexical"], ["query", "hello", "--mode", "lexical", "--json"],
]


@pytest.fixture()
def index(tmp_path: Path, fake_encoder) -> Path:  # type: ignore[no-untyped-def]
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        # More than a pipe holds (64 KiB) for every command but status: the writes fail while running.
        ix.add_texts([f"hello world number {i}" for i in range(400)])
    return tmp_path / "ix"


def _stream(kind: str) -> Any:
    """A stdout that fails: ``full`` (/dev/full), ``closed`` (none, as under ``>&-``) or ``gone`` (a pipe whose
    reader has left)."""
    if kind == "full":
        return open("/dev/full", "w")  # noqa: SIM115 - the command's stdout
    if kind == "closed":
        return None
    read_end, write_end = os.pipe()
    os.close(read_end)
    return os.fdopen(write_end, "w")


def _run(command: list[str], kind: str, index: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``command`` run as the ``searchapp`` entry point runs it (common.run) with a failing stdout."""
    monkeypatch.setenv("SEARCHAPP_INDEX", str(index))
    capsys.readouterr()
    real, failing = sys.stdout, _stream(kind)
    sys.stdout = failing
    try:
        with pytest.raises(SystemExit) as exit_:
            run(lambda: app([*command], prog_name="searchapp"))
    finally:
        sys.stdout = real
        if failing is not None:
            failing.close()
    return int(exit_.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("kind, why", [("full", "No space left on device"), ("closed", "stdout is closed"),
                                       ("gone", None)])
def test_a_failing_stdout_ends_every_command_the_same_way(index: Path, command: list[str], kind: str,
                                                          why: str | None, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # Full or closed: a traceback (OSError, AttributeError) or a silent exit 0; a reader that left: exit 0 for
    # export, 1 for query. Now exit status 2 each (an error, as grep's write errors), with one error line where the
    # output was lost to a failure.
    if kind == "full" and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    code, err = _run(command, kind, index, monkeypatch, capsys)
    assert code == 2, err
    assert err == (f"error: cannot write the output: {why}\n" if why else "")


def test_the_installed_command_exits_2_with_one_line_on_a_full_disk(index: Path) -> None:
    # The entry point itself (python -m searchapp), with the interpreter's own flush at exit.
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "wb") as full:
        res = subprocess.run([sys.executable, "-m", "searchapp", "export", "--index", str(index)], stdout=full,
                             stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                             timeout=120)
    assert (res.returncode, res.stderr) == (2, "error: cannot write the output: No space left on device\n")


def test_an_unknown_url_parameter_is_one_line_naming_it() -> None:
    pytest.importorskip("psycopg")
    res = CliRunner().invoke(app, ["status", "--index", "postgresql://app@127.0.0.1:1/db?schema=s&foo=bar"])
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [
        "error: unknown URL parameter 'foo': use schema, pool_size, vector_type, maintenance_work_mem, "
        "max_parallel_maintenance_workers or a libpq connection parameter (sslmode, connect_timeout, "
        "application_name, ...)"
    ]
