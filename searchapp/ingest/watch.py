"""Keeping an index in step with folders as they change (``searchapp watch``, ``serve --watch``).

Two threads. A collector follows the folders through ``watchfiles`` (inotify, FSEvents, ReadDirectoryChangesW; or
polling) and queues the paths that changed; it also notices a folder deleted, renamed away or made again (its
device and inode), and watches what is there. The caller's thread turns the queue into write sessions: each
folder is synced once at start, then the changed paths of a burst are synced together once the burst is over, so
a checkout touching a thousand files is one write session, an editor's save through a temporary file is one
update of the file it names, and a file still being written is not read half-way.

A write session is one call of ``sync(folder, paths)``: the ingest itself (``Index.ingest`` with ``within``), with
its rules for suffixes, hidden files, ignore files, links, sizes and ``--exclude``, under the writer lock for that
call only, so other writers take their turns between sessions. What the ignore files leave out starts no session
(the walk's own rule decides each changed path); a changed ignore file has the folder it speaks of synced whole, so
what it now leaves out is removed and what it no longer does is added (git's global excludes file, outside the
folders, is read again at the next whole sync). A session that fails as a whole (the lock not had within
``--wait``, a full disk) keeps its paths and is tried again; a file that fails is that file's warning in the
summary. Setting ``stop`` ends the watch after the session in progress has committed; anything else that
escapes a session ends it with a :class:`SearchappError` naming it (the caller says so and stops: an index that
no longer follows its folders is never left to look as if it did).

Links: each folder is its real path at start. One later replaced by a link (or reached through one: its real
path is not that one any more) is refused, said once, unless ``follow_links`` (then it is followed as an ingest of
it would be: its target's real path). A change reported under a link to a folder (inotify names the files of
``guide/`` as ``current/...`` when ``current -> guide`` lies in the watched folder) is taken where the walk finds
that file, under its folders' real paths; one that leads outside the folder is said once, as not followed: walks
never follow links to folders.
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
from searchapp.ingest.ignore import Ignores, ignore_scope
from searchapp.ingest.summary import IngestSummary
from searchapp.paths import own_path

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


@dataclass(frozen=True)
class _Refused:
    """A folder the collector stopped following, and why (said once, by the session loop)."""

    folder: Path
    reason: str


# What the collector knows of a folder: its device and inode while it is followed, why not while it is refused,
# None while it is gone.
State = tuple[int, int] | str | None


def check_index_place(folders: Sequence[Path], index_folder: str | os.PathLike[str]) -> None:
    """``ConfigError`` when the index folder is one of ``folders`` itself: every write session writes the index's
    files there, which would be changes to follow, and nothing tells them from documents but the store's own file
    names. An index folder inside a watched folder is ignored whole; one above it holds nothing of it."""
    place = os.path.realpath(index_folder)
    for folder in folders:
        if os.path.realpath(folder) == place:
            raise ConfigError(f"{folder}: the index is kept in this folder itself, so its own writes would be "
                              "taken for changes: keep it in another folder (one inside this one is fine)")


def _identity(folder: Path) -> tuple[int, int] | None:
    try:
        st = folder.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if os.path.isdir(folder) else None


def _hidden(relative: str) -> bool:
    return any(part.startswith(".") for part in Path(relative).parts)


def _link_on_the_way(folder: str, path: str) -> str:
    """The first link met from ``folder`` down to ``path``'s folder (``path``'s folder when none is there any
    more)."""
    current = folder
    for part in Path(os.path.relpath(path, folder)).parts[:-1]:
        current = os.path.join(current, part)
        if os.path.islink(current):
            return current
    return os.path.dirname(path)


class Watcher:
    """Follow ``folders`` (real paths of existing folders) into the index through ``sync``; ``report`` gets each
    :class:`Session`. ``ignore``: the index's own folder, whose changes are not the documents' where it lies inside
    a watched folder (``ConfigError`` where it is one: :func:`check_index_place`). ``follow_links``: the ingest's
    option, which ``sync`` passes on (a folder replaced by a link is followed with it, refused without).
    ``ignore_rules``: the ingest's option too; changes to what the ignore files leave out are not written (the
    walk's own rule, ``ingest/ignore.py``), and a changed ignore file has the folder it speaks of synced whole.
    :meth:`run` returns once ``stop`` is set and the session in progress is done."""

    def __init__(self, folders: Sequence[Path], sync: Sync, report: Callable[[Session], None],
                 settings: WatchSettings | None = None, stop: threading.Event | None = None,
                 ignore: Sequence[Path] = (), follow_links: bool = False, ignore_rules: bool = True) -> None:
        self.folders = [Path(os.path.realpath(f)) for f in folders]
        for place in ignore:
            check_index_place(self.folders, place)
        self.sync = sync
        self.report = report
        self.settings = settings or WatchSettings()
        self.stop = stop or threading.Event()
        self.ignore = [os.path.realpath(p) for p in ignore]
        self.follow_links = follow_links
        self.ignore_rules = ignore_rules
        self._rules: dict[Path, Ignores] = {}  # each folder's ignore rules, read again once an ignore file changes
        self._outside: set[str] = set()  # links to folders outside, said once each
        self._queue: queue.Queue[list[str] | _Comeback | _Refused] = queue.Queue()
        self._watching = threading.Event()  # the collector's watch is in place (changes from now on are seen)
        self._failure: BaseException | None = None

    # -- the collector thread ---------------------------------------------------------------------------------

    def _collect(self) -> None:
        try:
            self._follow()
        except BaseException as exc:  # a failure of watchfiles itself (or of this thread), reported by run()
            self._failure = exc
            self._watching.set()

    def _state(self, folder: Path) -> State:
        real = os.path.realpath(folder)
        if real != str(folder) and not self.follow_links:
            # The target of a link put in its place may be any folder this process can read: never indexed
            # unless the ingest would follow it.
            how = "a link to" if os.path.islink(folder) else "reached through a link, at"
            return (f"not followed: the folder is now {how} {real}, not the folder watched at start "
                    "(--follow-links follows it, as ingest does)")
        return _identity(folder)

    def _states(self, before: dict[Path, State]) -> dict[Path, State]:
        """Each folder's state now; a folder newly refused is queued to be said."""
        now = {f: self._state(f) for f in self.folders}
        for folder, state in now.items():
            if isinstance(state, str) and state != before.get(folder):
                self._queue.put(_Refused(folder, state))
        return now

    def _follow(self) -> None:
        import watchfiles

        known = self._states({})
        poll = self.settings.poll
        while not self.stop.is_set():
            present = [str(f) for f in self.folders if isinstance(known[f], tuple)]
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
                        if {f: self._state(f) for f in self.folders} != known:
                            break  # a folder went, came or was replaced: watch what is there now
            now = self._states(known)
            # Changes made while no watch was in place are not known: every folder there is synced whole (a walk
            # and a stat per file; only what changed is read).
            back = [f for f in self.folders if isinstance(now[f], tuple) and (now[f] != known[f] or present)]
            if back:
                self._queue.put(_Comeback(back))
            known = now

    # -- the session loop -------------------------------------------------------------------------------------

    def _wanted(self, path: str, reals: dict[Path, str]) -> list[tuple[Path, str]]:
        """The watched folders ``path`` was reported under (``reals``: their real paths now), each with the path
        where its walk finds that file: under its folders' real paths. Left out: a path hidden in the folder
        (never indexed: git's own churn in ``.git``, an editor's hidden temporary file), inside the index folder
        where that lies inside the watched one, under a link leading out of the folder (said once), or what the
        ignore files leave out. A changed ignore file (``.gitignore``, ``.ignore``, the repository's
        ``.git/info/exclude``) stands for the folder it speaks of: synced whole, under its new rules (what they now
        leave out is removed, what they no longer leave out is added)."""
        found = []
        for folder in self.folders:
            base = str(folder)
            real = reals.get(folder)
            if real is None or not is_under(path, base):
                continue
            where = real if path == base else own_path(path)
            if not is_under(where, real):
                self._not_followed(folder, path)
                continue
            scope = ignore_scope(where) if self.ignore_rules else None
            if scope is not None and is_under(scope, real):
                self._rules.pop(folder, None)
                if not _hidden(os.path.relpath(scope, real)) and not self._ignored(folder, real, scope):
                    found.append((folder, scope))
                continue
            if _hidden(os.path.relpath(where, real)):
                continue
            # The index folder at or above the watched one holds nothing of it: only one inside is left out.
            if any(is_under(where, p) and not is_under(real, p) for p in self.ignore):
                continue
            if self._ignored(folder, real, where):
                continue
            found.append((folder, where))
        return found

    def _ignored(self, folder: Path, real: str, path: str) -> bool:
        """Whether the ignore files leave out ``path`` (under ``real``, ``folder``'s real path), as the walk would."""
        if not self.ignore_rules or path == real:
            return False
        if folder not in self._rules:
            self._rules[folder] = Ignores(real)
        return self._rules[folder].ignores(path)

    def _not_followed(self, folder: Path, path: str) -> None:
        link = _link_on_the_way(str(folder), path)
        if link in self._outside:
            return
        self._outside.add(link)
        self.report(Session(folder, 0, note=(
            f"changes under {os.path.relpath(link, folder)}{os.sep} are not followed: a link to "
            f"{os.path.realpath(link)}, outside the folder (ingest does not follow links to folders)")))

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
                reals = self._reals()
                while item is not None:  # everything queued so far
                    if isinstance(item, _Comeback):
                        whole.update(item.folders)
                        for comeback in item.folders:
                            self._rules.pop(comeback, None)
                    elif isinstance(item, _Refused):
                        self.report(Session(item.folder, 0, note=item.reason))
                    else:
                        for path in item:
                            for folder, where in self._wanted(path, reals):
                                paths.setdefault(folder, set()).add(where)
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

    def _reals(self) -> dict[Path, str]:
        """The real path of each folder followed now (a refused one left out)."""
        return {f: os.path.realpath(f) for f in self.folders if not isinstance(self._state(f), str)}

    def _next(self, timeout: float) -> list[str] | _Comeback | _Refused | None:
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
            state = self._state(folder)  # again just before the session: a folder replaced since is not read
            if state is None:
                # Gone (deleted, renamed, unmounted): what is indexed from it stays until it is back, when it is
                # synced whole (the collector queues it).
                self.report(Session(folder, changed, note="the folder is gone; waiting for it to come back"))
            elif isinstance(state, str):
                pass  # refused: said once, when the collector saw it; followed again once the folder is back
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
