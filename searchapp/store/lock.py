"""One writer per index folder: threads of a process take turns on a mutex, processes on an exclusive ``flock``
of the folder's ``write.lock`` file."""

from __future__ import annotations

import contextlib
import fcntl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from searchapp.errors import IndexLockedError, StorageError


def retry(attempt: Callable[[], bool], timeout: float) -> bool:
    """Call ``attempt`` (a non-blocking try for a lock held by another process) until it succeeds or ``timeout``
    seconds have passed; whether it succeeded. Polling, because neither ``flock`` nor PostgreSQL's advisory locks
    can block with a time limit; the pause grows to 0.2 s, so a lock let go is taken within that."""
    deadline = time.monotonic() + timeout
    pause = 0.01
    while not attempt():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.2)
    return True


def locked_message(where: object, timeout: float) -> str:
    """The one wording of "another process holds the writer lock", saying how long was waited for it."""
    waited = f" (waited {timeout:g}s for it)" if timeout > 0 else ""
    return f"{where}: another process is writing to this index{waited}"


class FileLock:
    """An exclusive writer lock: another thread of this process waits its turn (or, with ``wait=False``, gets
    ``IndexLockedError``); another process gets ``IndexLockedError``, at once or after ``timeout`` seconds of
    waiting for it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._mutex = threading.Lock()
        self._owner: int | None = None

    @property
    def held_here(self) -> bool:
        """Whether the calling thread holds the lock."""
        return self._owner == threading.get_ident()

    @property
    def held(self) -> bool:
        """Whether some thread of this process holds the lock."""
        return self._owner is not None

    @contextlib.contextmanager
    def hold(self, wait: bool = True, timeout: float = 0.0) -> Iterator[None]:
        """Hold the lock for the block; another process's hold is waited for up to ``timeout`` seconds."""
        if not self._mutex.acquire(blocking=wait):
            raise IndexLockedError(f"{self.path.parent}: another thread is writing to this index")
        try:
            try:
                fh = open(self.path, "a+")
            except OSError as exc:  # a read-only folder: readable, never writable
                raise StorageError(f"{self.path.parent}: cannot take the writer lock: {exc.strerror or exc}") from exc

            def attempt() -> bool:
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return False
                return True

            if not retry(attempt, timeout):
                fh.close()
                raise IndexLockedError(locked_message(self.path.parent, timeout))
            self._owner = threading.get_ident()
            try:
                yield
            finally:
                self._owner = None
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
                fh.close()
        finally:
            self._mutex.release()
