"""One writer per index folder: threads of a process take turns on a mutex, processes on an exclusive ``flock``
of the folder's ``write.lock`` file."""

from __future__ import annotations

import contextlib
import fcntl
import threading
from collections.abc import Iterator
from pathlib import Path

from searchapp.errors import IndexLockedError


class FileLock:
    """An exclusive writer lock: another thread of this process waits its turn (or, with ``wait=False``, gets
    ``IndexLockedError``); another process gets ``IndexLockedError`` at once."""

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
    def hold(self, wait: bool = True) -> Iterator[None]:
        """Hold the lock for the block."""
        if not self._mutex.acquire(blocking=wait):
            raise IndexLockedError(f"{self.path.parent}: another thread is writing to this index")
        try:
            fh = open(self.path, "a+")
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                fh.close()
                raise IndexLockedError(f"{self.path.parent}: another process is writing to this index") from exc
            self._owner = threading.get_ident()
            try:
                yield
            finally:
                self._owner = None
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
                fh.close()
        finally:
            self._mutex.release()
