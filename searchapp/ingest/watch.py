"""Keeping an index in step with folders as they change (``searchapp watch``, ``serve --watch``).

Two threads. A collector follows the folders through ``watchfiles`` (inotify, FSEvents, ReadDirectoryChangesW; or
polling) and queues the paths that changed; it also notices a folder deleted, renamed away or made again (its
device and inode), and watches what is there. The caller's thread turns the queue into write sessions: each
folder is synced once at start, then the changed paths of a burst are synced together once the burst is over, so
a checkout touching a thousand files is one write session, an editor's save through a temporary file is one
update of the file it names, and a file still being written is not read half-way.

A write session is one call of ``sync(folder, paths)``: the ingest itself (``Index.ingest`` with ``within``), with
its rules for suffixes, hidden files, links, sizes and ``--exclude``, under the writer lock for that call only, so
other writers take their turns between sessions. A session that fails as a whole (the lock not had within
``--wait``, a full disk) keeps its paths and is tried again; a file that fails is that file's warning in the
summary. Setting ``stop`` ends the watch after the session in progress has committed; anything else that
escapes a session ends it with a :class:`SearchappError` naming it (the caller says so and stops: an index that
no longer follows its folders is never left to look as if it did).
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from searchapp.errors import ConfigError, SearchappError, first_line
from searchapp.ingest.files import is_under
from searchapp.ingest.pipeline import IngestSummary

# A write session: sync(folder, paths) brings the index in line with the files at or under ``paths`` (all of
# ``folder`` for None) and returns the ingest's summary.
Sync = Callable[[Path, Collection[str] | None], IngestSummary]
# How often the collector looks at the folders themselves (still there? the same folder?), and how long the
# session loop sleeps at most: a stop request is seen within this.
TICK_S = 0.2


@dataclass(frozen=True)
class WatchSettings:
    """``debounce``: seconds without a new change, and the least age of a changed file's modification time, before
    a burst is written (what makes a burst one session and keeps a file being written from being read half-way).
    ``poll``: seconds between scans of the folders instead of events (network mounts), ``None`` for events.
    ``retry``: seconds before a failed session is tried again. ``longest``: a burst that never quiets down (a log
    written every second) is written after this many seconds anyway."""

    debounce: float = 0.5
    poll: float | None = None
    retry: float = 5.0
    longest: float = 30.0

    def __post_init__(self) -> None:
        for name in ("debounce", "retry", "longest"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 10**6:
                raise ConfigError(f"{name} must be a number of seconds >= 0, got {value!r}")
        if self.poll is not None and (isinstance(self.poll, bool) or not isinstance(self.poll, int | float)
                                      or not 0 < self.poll < 10**6):
            raise ConfigError(f"poll must be a number of seconds > 0, got {self.poll!r}")


@dataclass(frozen=True)
class Session:
    """One write session, as reported: the folder, how many changed paths it covered (``None``: the whole
    folder, at start or when the folder came back), and the ingest's summary, or the error that failed it (then
    it is tried again in ``retry`` seconds) or a note (a folder gone, waited for)."""

    folder: Path
    changed: int | None
    summary: IngestSummary | None = None
    error: str | None = None
    note: str | None = None


@dataclass
class _Comeback:
    """Folders that are there again (made again, or renamed back) after being gone: synced whole."""

    folders: list[Path] = field(default_factory=list)


def _identity(folder: Path) -> tuple[int, int] | None:
    try:
        st = folder.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if os.path.isdir(folder) else None


def _hidden(relative: str) -> bool:
    return any(part.startswith(".") for part in Path(relative).parts)


class Watcher:
    """Follow ``folders`` (real paths of existing folders) into the index through ``sync``; ``report`` gets each
    :class:`Session`. ``ignore``: folders whose changes are not the documents' (the index's own folder, when it
    lies inside a watched one). :meth:`run` returns once ``stop`` is set and the session in progress is done."""

    def __init__(self, folders: Sequence[Path], sync: Sync, report: Callable[[Session], None],
                 settings: WatchSettings | None = None, stop: threading.Event | None = None,
                 ignore: Sequence[Path] = ()) -> None:
        self.folders = [Path(os.path.realpath(f)) for f in folders]
        self.sync = sync
        self.report = report
        self.settings = settings or WatchSettings()
        self.stop = stop or threading.Event()
        self.ignore = [os.path.realpath(p) for p in ignore]
        self._queue: queue.Queue[list[str] | _Comeback] = queue.Queue()
        self._watching = threading.Event()  # the collector's watch is in place (changes from now on are seen)
        self._failure: BaseException | None = None

    # -- the collector thread ---------------------------------------------------------------------------------

    def _collect(self) -> None:
        try:
            self._follow()
        except BaseException as exc:  # a failure of watchfiles itself (or of this thread), reported by run()
            self._failure = exc
            self._watching.set()

    def _follow(self) -> None:
        import watchfiles

        known = {f: _identity(f) for f in self.folders}
        poll = self.settings.poll
        while not self.stop.is_set():
            present = [str(f) for f in self.folders if known[f] is not None]
            if not present:
                self._watching.set()
                self.stop.wait(TICK_S)
            else:
                changes = watchfiles.watch(
                    *present, watch_filter=None, debounce=int(TICK_S * 1000), step=50, stop_event=self.stop,
                    rust_timeout=int(TICK_S * 1000), yield_on_timeout=True, raise_interrupt=False,
                    force_polling=poll is not None, poll_delay_ms=int((poll or 0.3) * 1000),
                )
                with contextlib.closing(changes):
                    for batch in changes:
                        self._watching.set()
                        if batch:
                            self._queue.put([path for _, path in batch])
                        if {f: _identity(f) for f in self.folders} != known:
                            break  # a folder went or came: watch what is there now
            now = {f: _identity(f) for f in self.folders}
            # Changes made while no watch was in place are not known: every folder there is synced whole (a walk
            # and a stat per file; only what changed is read).
            back = [f for f in self.folders if now[f] is not None and (now[f] != known[f] or present)]
            if back:
                self._queue.put(_Comeback(back))
            known = now

    # -- the session loop -------------------------------------------------------------------------------------

    def _wanted(self, path: str) -> list[Path]:
        """The watched folders ``path`` belongs to, unless it is hidden in them (never indexed: git's own churn
        in ``.git``, an editor's hidden temporary file) or inside an ignored folder."""
        if any(is_under(path, p) for p in self.ignore):
            return []
        found = []
        for folder in self.folders:
            base = str(folder)
            if is_under(path, base) and not _hidden(os.path.relpath(path, base)):
                found.append(folder)
        return found

    def run(self) -> None:
        """Sync every folder, then each burst of changes, until ``stop`` is set. ``SearchappError`` when the watch
        cannot go on: the folders cannot be watched, or a session failed with something else than the store's
        expected failures (which are reported and tried again)."""
        collector = threading.Thread(target=self._collect, name="searchapp-watch", daemon=True)
        collector.start()
        self._watching.wait(30)  # the first sync's walk must come after the watch is in place, or a change is lost
        try:
            self._sessions()
        except (SearchappError, OSError):
            raise
        except Exception as exc:
            # Not a failure the session loop knows to try again (a store or encoder error of another kind): the
            # index no longer follows the folders, and the caller must not go on as if it did.
            raise SearchappError(f"the watch stopped: {type(exc).__name__}: {first_line(exc)}") from exc
        finally:
            self.stop.set()
            collector.join(timeout=10)

    def _sessions(self) -> None:
        whole = set(self.folders)  # folders to sync whole
        paths: dict[Path, set[str]] = {}
        first_change = last_change = retry_at = 0.0
        while not self.stop.is_set():
            if self._failure is not None:
                raise SearchappError(f"cannot watch the folders: {first_line(self._failure)} (--poll SECONDS "
                                     "scans them instead)")
            due = self._due(whole, paths, first_change, last_change, retry_at)
            item = self._next(min(TICK_S, max(0.0, due - time.monotonic())))
            if item is not None:
                now = time.monotonic()
                while item is not None:  # everything queued so far
                    if isinstance(item, _Comeback):
                        whole.update(item.folders)
                    else:
                        for path in item:
                            for folder in self._wanted(path):
                                paths.setdefault(folder, set()).add(path)
                    item = self._next(0)
                first_change = first_change or now
                last_change = now
                # Not written yet unless the burst has lasted ``longest``: changes that never stop coming must
                # not keep the session from ever starting.
                due = self._due(whole, paths, first_change, last_change, retry_at)
            if (whole or paths) and time.monotonic() >= due and not self.stop.is_set():
                if self._write(whole, paths):
                    first_change = last_change = retry_at = 0.0
                else:
                    retry_at = time.monotonic() + self.settings.retry

    def _next(self, timeout: float) -> list[str] | _Comeback | None:
        try:
            return self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
        except queue.Empty:
            return None

    def _due(self, whole: set[Path], paths: dict[Path, set[str]], first_change: float, last_change: float,
             retry_at: float) -> float:
        """When the pending changes may be written (monotonic seconds): ``debounce`` after the last change and
        after every changed file's modification time, no later than ``longest`` after the first change, and not
        before a failed session's retry."""
        if not (whole or paths):
            return time.monotonic() + TICK_S
        s = self.settings
        due = last_change + s.debounce if paths else 0.0
        wall, mono = time.time(), time.monotonic()
        for path in (p for group in paths.values() for p in group):
            with contextlib.suppress(OSError):
                due = max(due, mono + (os.stat(path).st_mtime + s.debounce - wall))
        if first_change:
            due = min(due, first_change + s.longest)
        return max(due, retry_at)

    def _write(self, whole: set[Path], paths: dict[Path, set[str]]) -> bool:
        """One session per folder with pending changes (whole folders first); ``False`` if one failed (its
        changes stay pending). Stops between folders when asked to."""
        for folder in self.folders:
            if folder not in whole and folder not in paths:
                continue
            if self.stop.is_set():
                return True
            within = None if folder in whole else paths[folder]
            changed = None if within is None else len(within)
            if _identity(folder) is None:
                # Gone (deleted, renamed, unmounted): what is indexed from it stays until it is back, when it is
                # synced whole (the collector queues it).
                self.report(Session(folder, changed, note="the folder is gone; waiting for it to come back"))
            else:
                try:
                    summary = self.sync(folder, within)
                except (SearchappError, OSError) as exc:
                    self.report(Session(folder, changed, error=str(exc) or type(exc).__name__))
                    return False
                self.report(Session(folder, changed, summary=summary))
            whole.discard(folder)
            paths.pop(folder, None)
        return True
