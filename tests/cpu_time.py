"""A bound on this process's CPU time for the tests of readers of untrusted text: a loaded machine does not fail
it, and a quadratic or exponential rule does."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

needs_cpu_timer = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer (POSIX)")


@contextmanager
def cpu_seconds(limit: float) -> Iterator[None]:
    """Run the block with at most ``limit`` seconds of this process's CPU time; past it, TimeoutError."""

    def stop(signum: int, frame: object) -> None:
        raise TimeoutError(f"over {limit:.1f} s of CPU time")

    previous = signal.signal(signal.SIGPROF, stop)
    signal.setitimer(signal.ITIMER_PROF, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
