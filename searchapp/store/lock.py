"""One writer per index folder: an exclusive ``flock`` on its ``write.lock`` file."""

from __future__ import annotations

import contextlib
import fcntl
import threading
from collections.abc import Iterator
from pathlib import Path

from searchapp.errors import IndexLockedError


class FileLock:
    """An exclusive lock on ``path``, refused at once (``IndexLockedError``) while another process holds it.

    The lock belongs to an open file, not to a thread: a second ``hold`` from this process while the first is
    held is refused too, so threads of one process must take turns before they come here (``Index`` does).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._owner: int | None = None

    @property
    def held_here(self) -> bool:
        """Whether the calling thread holds the lock."""
        return self._owner == threading.get_ident()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the lock for the block."""
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
