"""``searchapp watch``: the real command in its own process, following a temporary folder, while this process
reads the index as any other reader would.

The watcher runs through a small wrapper around the CLI that gives it the tests' fake encoder (so no model is
loaded) and, where a test asks for it, a slower encoder and smaller commit groups, so that a write session lasts
long enough to be interrupted. Nothing else about the command changes.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from searchapp import Index
from searchapp.ingest import pipeline
from tests.server_helpers import free_port

ROOT = Path(__file__).resolve().parents[2]
WRAPPER = r"""
import os, sys, time
from searchapp.index import Index
from searchapp.ingest import pipeline
from tests.server_helpers import free_port
from tests.fakes import FakeEncoder

delay = float(os.environ.get("WATCH_TEST_ENCODE_DELAY", "0"))
pipeline.FLUSH_PASSAGES = int(os.environ.get("WATCH_TEST_FLUSH_PASSAGES", pipeline.FLUSH_PASSAGES))
fail_on = os.environ.get("WATCH_TEST_FAIL_ON")


class Slow(FakeEncoder):
    def encode(self, texts, truncate=False):
        time.sleep(delay)
        if fail_on and any(fail_on in t for t in texts):  # an error of no kind the watcher expects
            raise RuntimeError(f"the encoder broke on {fail_on!r}\n  (a second line of the driver's message)")
        return super().encode(texts, truncate)


encoder = Slow()
Index._make_encoder = lambda self: encoder
from searchapp.cli import app
app(sys.argv[1:], prog_name="searchapp")
"""
DEBOUNCE = "0.4"
# Generous: the machine running the tests may be busy; the measured figure is in docs/cli.md.
VISIBLE_WITHIN_S = 20.0


class Watching:
    """A ``searchapp watch FOLDER --json`` process: its JSON lines (one per write session) as they come."""

    def __init__(self, folder: Path, index: Path, env: dict[str, str] | None = None, *args: str) -> None:
        environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRAPPER, "watch", str(folder), "-i", str(index), "--debounce", DEBOUNCE, "--json",
             *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment, cwd=ROOT,
        )
        self.sessions: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.sessions.put(json.loads(line))

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        self.stderr.extend(self.process.stderr)

    def session(self, timeout: float = 60.0) -> dict[str, Any]:
        """The next write session's summary."""
        try:
            got = self.sessions.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no write session within {timeout}s; stderr: {''.join(self.stderr)}") from None
        self.seen.append(got)
        return got

    def quiet(self, seconds: float) -> None:
        """No write session for ``seconds``."""
        with pytest.raises(queue.Empty):
            got = self.sessions.get(timeout=seconds)
            raise AssertionError(f"an unexpected write session: {got}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.process.send_signal(sig)
        return self.process.wait(timeout=60)

    def ended(self, timeout: float) -> tuple[int, str]:
        """The exit status and the whole stderr of a process that ends by itself within ``timeout``."""
        status = self.process.wait(timeout=timeout)
        self._stderr_reader.join(timeout=10)
        return status, "".join(self.stderr)


@contextmanager
def watching(folder: Path, index: Path, env: dict[str, str] | None = None) -> Iterator[Watching]:
    w = Watching(folder, index, env)
    try:
        yield w
    finally:
        if w.process.poll() is None:
            w.process.kill()
            w.process.wait(timeout=30)


def visible(check: Callable[[], bool], what: str) -> float:
    """Seconds until ``check()`` holds (read in this process, a reader of the index like any other)."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > VISIBLE_WITHIN_S:
            raise AssertionError(f"not visible within {VISIBLE_WITHIN_S}s: {what}")
        time.sleep(0.1)
    return time.monotonic() - started


def paths_found(index: Path, word: str) -> set[str]:
    with Index(index, read_only=True) as ix:
        return {Path(h.path).name for h in ix.search(word, mode="lexical", k=50)}


def documents(index: Path) -> dict[str, Any]:
    with Index(index, read_only=True) as ix:
        return {Path(d.path).name: d for d in ix.documents()}


def test_created_modified_renamed_deleted_files_are_followed_and_other_writers_get_their_turn(tmp_path) -> None:  # type: ignore[no-untyped-def]
    docs, index = tmp_path / "docs", tmp_path / "ix"
    docs.mkdir()
    (docs / "a.txt").write_text("Apples ripen in the autumn sun.")
    with watching(docs, index) as w:
        first = w.session()
        assert first["changed"] is None and first["added"] == 1  # the ingest at start: the whole folder

        (docs / "b.txt").write_text("Zebras graze on the open plain.")
        visible(lambda: paths_found(index, "zebras") == {"b.txt"}, "a new file")
        assert w.session()["added"] == 1

        (docs / "b.txt").write_text("Giraffes browse the tall acacias.")
        visible(lambda: paths_found(index, "giraffes") == {"b.txt"}, "a changed file")
        assert paths_found(index, "zebras") == set()
        assert w.session()["updated"] == 1

        (docs / "b.txt").rename(docs / "c.txt")
        visible(lambda: paths_found(index, "giraffes") == {"c.txt"}, "a renamed file")
        renamed = w.session()
        assert (renamed["added"], renamed["removed"]) == (1, 1)

        (docs / "sub").mkdir()
        (docs / "sub" / "d.md").write_text("# Otters\n\nOtters hold hands while they sleep.")
        visible(lambda: paths_found(index, "otters") == {"d.md"}, "a file in a new folder")
        w.session()
        (docs / "sub").rename(docs / "moved")  # one event for the folder, none for the file in it
        visible(lambda: "d.md" in documents(index) and "moved" in documents(index)["d.md"].path, "a moved folder")
        w.session()

        (docs / "c.txt").unlink()
        visible(lambda: "c.txt" not in documents(index), "a deleted file")
        assert w.session()["removed"] == 1

        # Between write sessions the lock is free: another writer gets it at once.
        with Index(index) as other:
            assert len(other.remove_targets(["no-such-id"])) == 0
        (docs / ".hidden.txt").write_text("Hidden files are not indexed, whoever writes them.")
        (docs / "notes.bin").write_bytes(b"\x00\x01 not a supported type")
        w.quiet(0.8)
        assert w.stop() == 0
    assert set(documents(index)) == {"a.txt", "d.md"}


def test_a_500_file_burst_is_one_session_an_atomic_save_one_update_and_a_growing_file_is_read_whole(tmp_path) -> None:  # type: ignore[no-untyped-def]
    docs, index = tmp_path / "docs", tmp_path / "ix"
    (docs / "checkout").mkdir(parents=True)
    target = docs / "notes.txt"
    target.write_text("Version one of the notes.")
    # One passage a file: the 500 fit in one commit group, so one write session is one indexed_at for all.
    assert pipeline.FLUSH_PASSAGES > 500
    with watching(docs, index) as w:
        w.session()
        for i in range(500):  # a checkout
            (docs / "checkout" / f"file{i:03d}.txt").write_text(f"Checked out file number {i}.")
        burst = w.session()
        assert (burst["changed"], burst["added"]) == (500, 500)
        w.quiet(0.8)
        # The index's own record of when each document was written: the same instant for all 500.
        written = {d.indexed_at for name, d in documents(index).items() if name.startswith("file")}
        assert len(written) == 1 and None not in written
        assert sum(name.startswith("file") for name in documents(index)) == 500

        # An editor's save: the new text to a temporary file (one of a type that is indexed), then renamed over.
        temporary = docs / "notes.txt.save.txt"
        temporary.write_text("Version two of the notes, saved atomically.")
        os.replace(temporary, target)
        saved = w.session()
        assert (saved["added"], saved["updated"], saved["removed"]) == (0, 1, 0)
        assert {n for n in documents(index) if not n.startswith("file")} == {"notes.txt"}
        assert paths_found(index, "atomically") == {"notes.txt"}

        # A file written in two goes, a pause between them shorter than the debounce: read once, whole.
        halves = ("The first half is about herons. ", "The second half is about kingfishers.")
        with open(docs / "grown.txt", "w") as f:
            f.write(halves[0])
            f.flush()
            time.sleep(0.15)
            f.write(halves[1])
        grown = w.session()
        assert (grown["added"], grown["updated"]) == (1, 0)
        w.quiet(0.8)  # no second session: the half-written file was never read
        with Index(index, read_only=True) as ix:
            assert ix.document(str(docs / "grown.txt")).text.strip() == "".join(halves).strip()
        assert w.stop() == 0


def test_sigterm_during_a_burst_ends_after_its_session_and_the_next_start_resumes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    docs, index = tmp_path / "docs", tmp_path / "ix"
    (docs / "first").mkdir(parents=True)
    (docs / "readme.txt").write_text("The project's readme.")
    # Commit groups of 5 passages, each embedded in 0.1 s: the burst's session takes some 2 s.
    slow = {"WATCH_TEST_ENCODE_DELAY": "0.1", "WATCH_TEST_FLUSH_PASSAGES": "5"}
    texts = {f"f{i:03d}.txt": f"Burst file {i} tells of lighthouses. It has a second sentence." for i in range(100)}
    with watching(docs, index, slow) as w:
        w.session()
        for name, text in texts.items():
            (docs / "first" / name).write_text(text)
        visible(lambda: any(n.startswith("f") for n in documents(index)), "the burst's first commit")
        w.process.send_signal(signal.SIGTERM)  # mid-session: some groups committed, most not yet
        (docs / "later.txt").write_text("Written while the watcher was stopping.")
        assert w.process.wait(timeout=60) == 0
        burst = w.session(timeout=5)
        assert burst["added"] == 100  # the session in progress was finished, not cut
        assert w.sessions.empty()  # and no other was started
    with Index(index, read_only=True) as ix:
        held = {Path(d.path).name for d in ix.documents()}
        assert held == {"readme.txt", *texts}
        for name, text in texts.items():  # whole documents
            assert ix.document(str(docs / "first" / name)).text.strip() == text
    with watching(docs, index) as w:
        resumed = w.session()
        assert resumed["changed"] is None
        assert (resumed["added"], resumed["unchanged"]) == (1, 101)
        assert w.stop(signal.SIGINT) == 0
    assert "later.txt" in documents(index)


def found_over_http(port: int, word: str) -> set[str]:
    """The names of the files a lexical search of the server on ``port`` finds (none while it is not up)."""
    import httpx

    try:
        r = httpx.post(f"http://127.0.0.1:{port}/search", json={"query": word, "mode": "lexical"}, timeout=5)
    except httpx.TransportError:
        return set()
    return {Path(h["path"]).name for h in r.json()["hits"]} if r.status_code == 200 else set()


@contextmanager
def serving_watched(
    tmp_path: Path, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], Path, int]]:
    """``serve --watch docs`` once the file docs/ starts with (about herons) can be found over HTTP: the process, the
    folder and the port."""
    docs, index = tmp_path / "docs", tmp_path / "ix"
    docs.mkdir()
    (docs / "a.txt").write_text("Herons wait by the river.")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", WRAPPER, "serve", "-i", str(index), "--port", str(port), "--lazy", "--watch", str(docs)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )
    try:
        visible(lambda: found_over_http(port, "herons") == {"a.txt"}, "the folder's file, ingested at start")
        yield server, docs, port
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(timeout=30)


def test_serve_watch_serves_what_the_folder_holds_and_stops_with_the_server(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with serving_watched(tmp_path) as (server, docs, port):
        (docs / "b.txt").write_text("Kingfishers dive for fish.")
        visible(lambda: found_over_http(port, "kingfishers") == {"b.txt"}, "a new file, over HTTP")
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
    assert server.stderr is not None and "watching" in server.stderr.read()


def error_line(stderr: str) -> str:
    """The one ``error:`` line of a failed command's stderr, with no traceback around it."""
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and stderr.rstrip().endswith(errors[0]), stderr
    return errors[0]


def test_watch_with_the_index_in_the_folder_above_follows_every_change(tmp_path) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Apples ripen in the autumn sun.")
    with watching(docs, tmp_path) as w:  # `watch docs --index .`
        assert w.session()["added"] == 1
        (docs / "b.txt").write_text("Zebras graze on the open plain.")
        visible(lambda: paths_found(tmp_path, "zebras") == {"b.txt"}, "a change after the first sync")
        assert w.session()["added"] == 1
        assert w.stop() == 0


@pytest.mark.parametrize("command", ["watch", "serve"])
def test_an_index_kept_in_the_watched_folder_itself_is_refused_in_one_line_before_it_is_made(  # type: ignore[no-untyped-def]
    tmp_path, command: str
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Apples ripen in the autumn sun.")
    args = (["watch", str(docs), "-i", str(docs)] if command == "watch"
            else ["serve", "-i", str(docs), "--port", str(free_port()), "--lazy", "--watch", str(docs)])
    done = subprocess.run([sys.executable, "-c", WRAPPER, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert done.returncode == 2
    assert "the index is kept in this folder itself" in error_line(done.stderr)
    assert sorted(p.name for p in docs.iterdir()) == ["a.txt"]  # no index made there


def test_a_watch_whose_session_fails_unexpectedly_ends_with_one_error_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    docs, index = tmp_path / "docs", tmp_path / "ix"
    docs.mkdir()
    (docs / "a.txt").write_text("Apples ripen in the autumn sun.")
    with watching(docs, index, {"WATCH_TEST_FAIL_ON": "poison"}) as w:
        w.session()
        (docs / "b.txt").write_text("A poison pill for the encoder.")
        status, stderr = w.ended(timeout=60)
    assert status == 2
    assert error_line(stderr) == "error: the watch stopped: RuntimeError: the encoder broke on 'poison'"


def test_serve_watch_ends_with_an_error_when_its_watcher_dies(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with serving_watched(tmp_path, {"WATCH_TEST_FAIL_ON": "poison"}) as (server, docs, _):
        (docs / "b.txt").write_text("A poison pill for the encoder.")
        # Not a server going on with an index that no longer follows the folder: it ends, saying why.
        assert server.wait(timeout=60) == 2
    assert server.stderr is not None
    line = error_line(server.stderr.read())
    assert line.startswith("error: the watch stopped: RuntimeError: the encoder broke on 'poison'; the server stopped")


def test_a_watched_collection_takes_the_files_that_come_later(tmp_path) -> None:  # type: ignore[no-untyped-def]
    docs, index = tmp_path / "docs", tmp_path / "ix"
    docs.mkdir()
    (docs / "a.txt").write_text("Apples ripen in the autumn sun.")
    w = Watching(docs, index, None, "--collection", "orchard", "--description", "Fruit notes")
    try:
        w.session()
        (docs / "b.txt").write_text("Pears ripen in the autumn too.")
        visible(lambda: paths_found(index, "pears") == {"b.txt"}, "a new file")
        w.session()
        with Index(index, read_only=True) as ix:
            assert [c.to_dict() for c in ix.collections()] == [
                {"name": "orchard", "description": "Fruit notes", "documents": 2, "passages": 2}]
    finally:
        w.process.kill()
        w.process.wait(timeout=30)
