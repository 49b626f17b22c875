"""Progress is a side channel: an ingest or a watch whose stderr cannot be written (a full disk, a reader that
left, none at all) does all its work and exits with the work's status (issue: hardening, round 5; docs/cli.md,
"Exit status").

The command runs in its own process through ``searchapp.cli.main`` (what the installed ``searchapp`` runs), with
the tests' fake encoder so that no model is loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

from searchapp import Index

ROOT = Path(__file__).resolve().parents[2]
WRAPPER = r"""
import sys
from searchapp.index import Index
from tests.fakes import FakeEncoder

encoder = FakeEncoder()
Index._make_encoder = lambda self: encoder
sys.argv[0] = "searchapp"
from searchapp.cli import main
main()
"""
DOCUMENTS = 60


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(DOCUMENTS):
        (folder / f"page{i}.md").write_text(f"# Page {i}\n\nHow to rotate key number {i}.\n", encoding="utf-8")
    return folder


@contextmanager
def _stderr(kind: str) -> Iterator[dict[str, Any]]:
    """``subprocess`` arguments giving the child a stderr that fails: ``full`` (/dev/full), ``gone`` (a pipe whose
    reader has left) or ``closed`` (descriptor 2 closed, as under ``2>&-``)."""
    if kind == "full":
        with open("/dev/full", "w") as full:
            yield {"stderr": full}
    elif kind == "gone":
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            yield {"stderr": write_end}
        finally:
            os.close(write_end)
    else:
        yield {"preexec_fn": lambda: os.close(2)}


def _command(*args: str) -> list[str]:
    return [sys.executable, "-c", WRAPPER, *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize("kind", ["full", "gone", "closed"])
def test_an_ingest_whose_stderr_fails_does_all_its_work(kind: str, docs: Path, tmp_path: Path) -> None:
    index = tmp_path / "ix"
    with _stderr(kind) as stderr:
        done = subprocess.run(_command("ingest", str(docs), "-i", str(index), "--json"), stdout=subprocess.PIPE,
                              text=True, env=_env(), cwd=tmp_path, timeout=300, check=False, **stderr)
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout)["added"] == DOCUMENTS
    with Index(index, read_only=True) as ix:
        assert ix.stats().documents == DOCUMENTS


def test_a_closed_stderr_is_not_taken_by_a_file_the_command_opens(docs: Path, tmp_path: Path) -> None:
    # With descriptor 2 closed, the first file opened would be number 2, and whatever a library writes to
    # "stderr" would land in it.
    probe = r"""
import os, sys
sys.argv = ["searchapp", "--version"]
from searchapp.cli import common
common.reserve_standard_descriptors()
fd = os.open(os.devnull, os.O_RDONLY)
print(fd)
"""
    done = subprocess.run([sys.executable, "-c", probe], stdout=subprocess.PIPE, text=True, env=_env(),
                          preexec_fn=lambda: os.close(2), timeout=60, check=True)
    assert int(done.stdout) > 2


def _line(stream: IO[str]) -> dict[str, Any]:
    line = stream.readline()
    assert line, "the watcher ended"
    return json.loads(line)  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", ["full", "closed"])
def test_a_watch_whose_stderr_fails_keeps_watching(kind: str, docs: Path, tmp_path: Path) -> None:
    index = tmp_path / "ix"
    with _stderr(kind) as stderr:
        watcher = subprocess.Popen(_command("watch", str(docs), "-i", str(index), "--debounce", "0.3", "--json"),
                                   stdout=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path, **stderr)
    try:
        assert watcher.stdout is not None
        assert _line(watcher.stdout)["added"] == DOCUMENTS
        (docs / "new.md").write_text("# New\n\nA page written while the watcher runs.\n", encoding="utf-8")
        assert _line(watcher.stdout)["added"] == 1
        assert watcher.poll() is None
    finally:
        watcher.terminate()
        watcher.wait(timeout=60)
    with Index(index, read_only=True) as ix:
        assert ix.stats().documents == DOCUMENTS + 1
