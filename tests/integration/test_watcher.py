"""The watcher (``ingest/watch.py``) in this process, on a real folder and index: what it keeps going through (a
full disk, the writer lock held by another process, a folder deleted and made again, a file that fails to load,
changes that never stop), its polling mode, and the ingest restricted to some paths that its sessions are.
``tests/integration/test_watch.py`` runs the command itself."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from searchapp import Index, IndexConfig
from searchapp.errors import ConfigError, SearchappError
from searchapp.ingest.watch import Session, Watcher, WatchSettings
from tests.integration.test_disk_full import sqlite_full  # noqa: F401  (the fixture)


class Recorder:
    """The sessions a watcher reports, waited for one at a time."""

    def __init__(self) -> None:
        self.sessions: list[Session] = []
        self.changed = threading.Condition()

    def __call__(self, session: Session) -> None:
        with self.changed:
            self.sessions.append(session)
            self.changed.notify_all()

    def next(self, seen: int, timeout: float = 30.0) -> Session:
        """The session after the first ``seen``."""
        with self.changed:
            if not self.changed.wait_for(lambda: len(self.sessions) > seen, timeout):
                raise AssertionError(f"no session after {self.sessions}")
            return self.sessions[seen]


@contextmanager
def running(ix: Index, folder: Path, follow_links: bool = False, **settings: Any) -> Iterator[Recorder]:
    record = Recorder()
    stop = threading.Event()

    def sync(root: Path, within: Any) -> Any:
        return ix.ingest(root, within=within, follow_links=follow_links)

    # The option goes to the watcher only when asked for, as the command passes it.
    links = {"follow_links": True} if follow_links else {}
    ignore = [ix.path] if ix.path is not None else []
    watcher = Watcher([folder], sync, record, WatchSettings(**{"debounce": 0.2, "retry": 0.3, **settings}), stop,
                      ignore=ignore, **links)
    thread = threading.Thread(target=watcher.run)
    thread.start()
    try:
        record.next(0)  # the ingest at start
        yield record
    finally:
        stop.set()
        thread.join(timeout=30)
        assert not thread.is_alive()


def names(ix: Index) -> set[str]:
    return {Path(d.path).name for d in ix.documents()}


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    """A folder holding one file, ``a.txt``."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("There from the start.")
    return folder


@pytest.fixture()
def ix(tmp_path: Path, fake_encoder: Any) -> Iterator[Index]:
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as index:
        yield index


@pytest.mark.parametrize("poll", [None, 0.1], ids=["events", "polling"])
def test_a_deleted_and_remade_folder_is_followed_again(docs: Path, ix: Index, poll: float | None) -> None:
    with running(ix, docs, poll=poll) as record:
        assert record.sessions[0].summary is not None and record.sessions[0].summary.added == 1
        shutil.rmtree(docs)
        seen = 1
        # Its files' deletions may come first (nothing to remove yet: the folder cannot be walked), then a note.
        while (session := record.next(seen)).note is None:
            seen += 1
        assert "gone" in session.note and names(ix) == {"a.txt"}  # kept while the folder is away
        docs.mkdir()
        (docs / "new.txt").write_text("The new folder's file.")
        while (session := record.next(seen)).changed is not None:
            seen += 1
        assert session.summary is not None and (session.summary.added, session.summary.removed) == (1, 1)
        assert names(ix) == {"new.txt"}
        (docs / "newer.txt").write_text("Followed in the new folder too.")
        deadline = time.monotonic() + 30
        while "newer.txt" not in names(ix):
            assert time.monotonic() < deadline, record.sessions
            time.sleep(0.05)


def test_a_full_disk_is_reported_and_the_session_tried_again(
    docs: Path, ix: Index, sqlite_full: Callable[[int], Any]  # noqa: F811
) -> None:
    with running(ix, docs) as record:
        sqlite_full(1)  # the next write transaction runs out of space
        # Kilobytes of text, so that its write needs new database pages.
        (docs / "b.txt").write_text(" ".join(f"Note {i} written while the disk was full." for i in range(200)))
        failed = record.next(1)
        assert failed.error is not None and "full" in failed.error
        retried = record.next(2)
        assert retried.summary is not None and retried.summary.added == 1
    assert names(ix) == {"a.txt", "b.txt"}


def test_a_file_that_fails_to_load_is_a_warning_and_the_watch_goes_on(docs: Path, ix: Index) -> None:
    with running(ix, docs) as record:
        (docs / "broken.docx").write_bytes(b"not a zip at all")
        broken = record.next(1).summary
        assert broken is not None and broken.failed == 1 and broken.failures[0][0].endswith("broken.docx")
        (docs / "b.txt").write_text("After the broken file.")
        later = record.next(2).summary
        assert later is not None and later.added == 1
    assert names(ix) == {"a.txt", "b.txt"}


def test_a_file_renamed_in_one_burst_keeps_its_vectors(docs: Path, ix: Index, fake_encoder: Any) -> None:
    # A rename reaches the watcher as a deletion and a creation in one burst: one session, which adds the new path
    # and removes the old one; the new document keeps the old one's vectors (ingest/reuse.py). (A deletion
    # written in a session of its own before the creation is seen leaves nothing to keep: the file is embedded.)
    (docs / "guide.md").write_text("# Guide\n\n" + "\n\n".join(
        " ".join(f"Step {i} of the guide sets up part{i} of the system." for _ in range(8)) for i in range(120)))
    with running(ix, docs) as record:
        first = record.sessions[0].summary
        assert first is not None and first.added == 2
        before = fake_encoder.embedded
        (docs / "guide.md").rename(docs / "manual.md")
        renamed = record.next(1).summary
    assert renamed is not None and (renamed.added, renamed.removed) == (1, 1)
    assert fake_encoder.embedded == before and renamed.passages_embedded == 0
    assert renamed.passages_reused == first.passages_embedded - 1 > 50  # all of the guide's (a.txt has one)
    assert names(ix) == {"a.txt", "manual.md"}


def test_changes_that_never_stop_are_written_after_the_longest_wait(docs: Path, ix: Index) -> None:
    log = docs / "log.txt"
    with running(ix, docs, debounce=0.5, longest=1.0) as record:
        stop = threading.Event()

        def keep_writing() -> None:  # a line every 0.1 s: never quiet for the 0.5 s debounce
            with open(log, "a") as f:
                while not stop.is_set():
                    f.write("Another line of the log.\n")
                    f.flush()
                    time.sleep(0.1)

        writer = threading.Thread(target=keep_writing)
        writer.start()
        try:
            started = time.monotonic()
            session = record.next(1, timeout=20)
            assert session.summary is not None and session.summary.added == 1
            assert not stop.is_set() and time.monotonic() - started < 15  # while the writes went on
        finally:
            stop.set()
            writer.join()


def test_a_session_refused_the_lock_is_reported_and_tried_again_once_the_other_writer_is_done(
    docs: Path, ix: Index
) -> None:
    from tests.integration.test_lock_wait import held_by_another_process

    with running(ix, docs) as record:
        with held_by_another_process(str(ix.location)):
            (docs / "b.txt").write_text("Written while another process held the lock.")
            refused = record.next(1)
            assert refused.error is not None and "another process is writing" in refused.error
        seen = 2
        while (session := record.next(seen)).summary is None:  # refused again until the other writer let go
            seen += 1
        assert session.summary.added == 1
    assert names(ix) == {"a.txt", "b.txt"}


def test_an_ingest_within_some_paths_reads_and_removes_only_there(tmp_path: Path, ix: Index) -> None:
    folder = tmp_path / "folder"
    (folder / "sub").mkdir(parents=True)
    for name in ("a.txt", "b.txt", "sub/c.txt", "sub/d.txt"):
        (folder / name).write_text(f"The file {name}.")
    assert ix.ingest(folder).added == 4
    real = Path(str(folder.resolve()))
    (folder / "a.txt").unlink()
    (folder / "b.txt").write_text("The file b.txt, changed.")
    (folder / "sub" / "c.txt").unlink()
    (folder / "sub" / "e.txt").write_text("A new file in sub.")
    (folder / "sub" / ".hidden.txt").write_text("Hidden, within the paths or not.")
    summary = ix.ingest(folder, within=[str(real / "sub"), str(real / "b.txt")])
    # a.txt is gone but outside the paths: kept; sub/ is walked by the ingest's rules (the hidden file skipped).
    assert (summary.added, summary.updated, summary.removed, summary.unchanged) == (1, 1, 1, 1)
    assert names(ix) == {"a.txt", "b.txt", "d.txt", "e.txt"}
    assert ix.ingest(folder, within=[str(real / "a.txt")]).removed == 1
    assert names(ix) == {"b.txt", "d.txt", "e.txt"}


def until(check: Callable[[], bool], what: str, record: Recorder, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout}s: {what}; sessions: {record.sessions}"
        time.sleep(0.05)


def paths(ix: Index) -> set[str]:
    return {d.path for d in ix.documents()}


def folder_of_one(folder: Path, name: str, text: str) -> Path:
    folder.mkdir()
    (folder / name).write_text(text)
    return folder


def swap_for_link(folder: Path, target: Path) -> None:
    """`mv docs docs.old; ln -s TARGET docs`"""
    folder.rename(folder.with_name(folder.name + ".old"))
    folder.symlink_to(target, target_is_directory=True)


@pytest.mark.parametrize("poll", [None, 0.1], ids=["events", "polling"])
def test_a_root_replaced_by_a_link_is_refused_and_its_target_never_read(
    tmp_path: Path, docs: Path, ix: Index, poll: float | None
) -> None:
    secret = folder_of_one(tmp_path / "secret", "creds.txt", "The password is swordfish.")
    with running(ix, docs, poll=poll) as record:
        swap_for_link(docs, secret)
        seen = 1
        while (session := record.next(seen)).note is None or "link" not in session.note:
            assert "creds.txt" not in names(ix), record.sessions
            seen += 1
        assert str(secret) in session.note and "--follow-links" in session.note
        (secret / "more.txt").write_text("Written in the link's target while it is watched.")
        (tmp_path / "docs.old" / "old.txt").write_text("Written in the folder watched at start, moved away.")
        time.sleep(1.0)  # five debounces: a session of either would have come by now
        assert names(ix) == {"a.txt"}  # what the folder held is kept, as for a folder gone
        assert [s.note for s in record.sessions[seen:]] == [session.note]  # said once
        # The folder back in place: followed again, and synced whole.
        docs.unlink()
        (tmp_path / "docs.old").rename(docs)
        while (session := record.next(seen)).changed is not None:
            seen += 1
        assert session.summary is not None and session.summary.added == 1
    assert names(ix) == {"a.txt", "old.txt"}


def test_a_root_replaced_by_a_link_is_followed_as_ingest_would_with_follow_links(
    tmp_path: Path, docs: Path, ix: Index
) -> None:
    target = folder_of_one(tmp_path / "target", "there.txt", "In the link's target from the start.")
    with running(ix, docs, follow_links=True) as record:
        swap_for_link(docs, target)
        until(lambda: "there.txt" in names(ix), "the target, synced whole", record)
        (target / "new.txt").write_text("Written in the target after the swap.")
        # Under its real path, where `searchapp ingest docs` puts it.
        until(lambda: str(target.resolve() / "new.txt") in paths(ix), "a change in the target", record)
        assert not any(s.note for s in record.sessions)


@pytest.mark.parametrize("poll", [None, 0.1], ids=["events", "polling"])
def test_changes_under_a_linked_subfolder_are_indexed_where_ingest_indexes_them(
    docs: Path, ix: Index, poll: float | None
) -> None:
    guide = docs / "guide"
    guide.mkdir()
    (guide / "g.txt").write_text("The guide's first page.")
    # Older than the second it is rewritten in: the scans compare modification times to the second.
    os.utime(guide / "g.txt", (time.time() - 10, time.time() - 10))
    (docs / "current").symlink_to("guide", target_is_directory=True)  # inotify names guide's files current/...
    real = docs.resolve() / "guide"
    with running(ix, docs, poll=poll) as record:
        assert paths(ix) == {str(docs.resolve() / "a.txt"), str(real / "g.txt")}
        (guide / "new.txt").write_text("A new page of the guide.")
        until(lambda: str(real / "new.txt") in paths(ix), "a new file in the linked folder", record)
        (guide / "g.txt").write_text("The guide's first page, rewritten.")
        until(lambda: "rewritten" in ix.document(str(real / "g.txt")).text, "an edited file", record)
        (guide / "new.txt").unlink()
        until(lambda: str(real / "new.txt") not in paths(ix), "a deleted file", record)
        assert not any(s.note for s in record.sessions)
    assert paths(ix) == {str(docs.resolve() / "a.txt"), str(real / "g.txt")}  # never under current/


def test_changes_under_a_link_leading_out_of_the_folder_are_said_once_not_followed(
    tmp_path: Path, docs: Path, ix: Index
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (docs / "out").symlink_to(outside, target_is_directory=True)
    with running(ix, docs) as record:
        (outside / "o.txt").write_text("Outside the watched folder.")
        note = record.next(1).note
        assert note is not None and "out/" in note and "not followed" in note and str(outside) in note
        (outside / "p.txt").write_text("Outside again.")
        time.sleep(0.5)
        (docs / "b.txt").write_text("Inside the watched folder.")
        until(lambda: "b.txt" in names(ix), "a file inside", record)
        assert [s.note for s in record.sessions if s.note] == [note]  # once, however many changes
    assert names(ix) == {"a.txt", "b.txt"}


@pytest.mark.parametrize("place", ["above", "inside"])
def test_the_index_folder_above_the_watched_one_hides_nothing_and_one_inside_is_left_out(
    tmp_path: Path, fake_encoder: Any, place: str
) -> None:
    project = tmp_path / "project"
    docs = project / "docs"
    docs.mkdir(parents=True)
    (docs / "a.txt").write_text("There from the start.")
    location = project if place == "above" else docs / "index"  # `watch docs --index .`; `--index docs/index`
    with Index(location, create=True, config=IndexConfig(), encoder=fake_encoder) as ix, \
            running(ix, docs) as record:
        (docs / "b.txt").write_text("Written after the first sync.")
        until(lambda: "b.txt" in names(ix), "a change after the first sync", record)
        time.sleep(1.0)
        # One session for b.txt, none for the index's own writes (the database and its journal).
        assert [s.changed for s in record.sessions] == [None, 1]


def test_an_index_kept_in_the_watched_folder_itself_is_refused(docs: Path, fake_encoder: Any) -> None:
    with Index(docs, create=True, config=IndexConfig(), encoder=fake_encoder) as ix, \
            pytest.raises(ConfigError, match="the index is kept in this folder itself"):
        Watcher([docs], lambda root, within: ix.ingest(root, within=within), Recorder(), ignore=[docs])


def test_a_session_that_fails_unexpectedly_ends_the_watch_with_its_reason(docs: Path, ix: Index) -> None:
    def sync(root: Path, within: Any) -> Any:
        if within is not None:
            raise RuntimeError("(psycopg.errors.CharacterNotInRepertoire) invalid byte sequence\n[SQL: INSERT ...]")
        return ix.ingest(root)

    failed: list[BaseException] = []

    def run() -> None:
        try:
            watcher.run()
        except BaseException as exc:
            failed.append(exc)

    watcher = Watcher([docs], sync, Recorder(), WatchSettings(debounce=0.2))
    thread = threading.Thread(target=run)
    thread.start()
    try:
        time.sleep(0.5)
        (docs / "b.txt").write_text("The session for this file fails.")
        thread.join(timeout=20)
        assert not thread.is_alive()  # ended, not hanging
    finally:
        watcher.stop.set()
        thread.join(timeout=10)
    assert len(failed) == 1 and isinstance(failed[0], SearchappError)
    assert str(failed[0]) == ("the watch stopped: RuntimeError: (psycopg.errors.CharacterNotInRepertoire) invalid "
                              "byte sequence")


def test_a_collector_that_fails_ends_the_watch_with_its_reason(
    docs: Path, ix: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    import watchfiles

    def broken(*paths: str, **options: Any) -> Any:
        raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(watchfiles, "watch", broken)
    watcher = Watcher([docs], lambda root, within: ix.ingest(root, within=within), Recorder())
    with pytest.raises(SearchappError, match="cannot watch the folders: .*inotify watch limit reached"):
        watcher.run()
