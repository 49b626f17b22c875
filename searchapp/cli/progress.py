"""What an ingest tells a person while it runs, on stderr: the stage it is in (reading files, loading the model),
then passages embedded out of the total, the rate and the time left.

On a terminal, one status line redrawn in place; without one (a log, CI), plain lines: one when the stage
changes, and while embedding a line at least every :data:`EVERY_S` seconds, written by a timer so that a long
batch (a slow CPU, a large model) still shows the run is alive, and one at the end.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

# Without a terminal, a line at least and at most this often while embedding.
EVERY_S = 5.0
# On a terminal, a redraw at most this often (reading 100,000 small files calls for as many).
REDRAW_S = 0.1
# The rate is measured from this many seconds back (the first batch, which includes loading the model, is left
# out as soon as a later one is in), so the time left follows the run's speed as it settles.
WINDOW_S = 60.0


def clock(seconds: float) -> str:
    """``seconds`` as ``m:ss`` or ``h:mm:ss``."""
    s = max(0, round(seconds))
    h, rest = divmod(s, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


class IngestProgress:
    """The ingest's reporter: call it with ``(passages embedded, passages to embed)``, and :meth:`stage` with what
    the run is doing before it embeds. Use as a context manager: the timer stops and the line is ended on exit."""

    def __init__(self, stream: TextIO | None = None, terminal: bool | None = None, every: float | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = self.stream.isatty() if terminal is None else terminal
        self.every = EVERY_S if every is None else every
        self.done, self.total = 0, None  # type: tuple[int, int | None]
        self.seen: list[tuple[float, int]] = []  # (time, passages done) at each report with passages done
        self.current = ""  # the stage, until embedding starts
        self.last_line = ""
        self.last_write = 0.0
        self._drawn = 0  # characters of the status line on a terminal
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None

    # -- what the ingest calls -------------------------------------------------------------------------------

    def __call__(self, done: int, total: int | None) -> None:
        with self._lock:
            now = time.monotonic()
            first = not self.seen and done == 0
            self.done, self.total = done, total
            self.current = ""
            if done:
                self.seen.append((now, done))
            elif not self.seen:
                self.seen.append((now, 0))
            finished = total is not None and done >= total
            self._show(self.embedding_line(now), force=first or finished)
        if self._timer is None and not self.terminal and not finished:
            self._timer = threading.Thread(target=self._tick, name="ingest-progress", daemon=True)
            self._timer.start()

    def stage(self, text: str) -> None:
        """What the run is doing now (``reading files 120/4000``, ``loading the model``): drawn at once on a
        terminal; in a log, a line when the stage's name changes, else at most every :data:`EVERY_S` seconds."""
        with self._lock:
            name_changed = text.split(" ", 2)[:2] != self.current.split(" ", 2)[:2]
            self.current = text
            self._show(text, force=name_changed)

    # -- what it shows ---------------------------------------------------------------------------------------

    def rate(self, now: float) -> float | None:
        """Passages a second over the last :data:`WINDOW_S` seconds of reports, ``None`` before two reports."""
        seen = self.seen[1:] if len(self.seen) >= 3 else self.seen  # the first batch waited for the model
        points = [p for p in seen if now - p[0] <= WINDOW_S]
        if len(points) < 2:
            points = seen[-2:]
        if len(points) < 2 or points[-1][0] <= points[0][0]:
            return None
        return (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])

    def embedding_line(self, now: float) -> str:
        """``embedded 1200/1847 passages (65%), 31.2 passages/s, 0:21 left``: the parts that are known."""
        if self.total is None:
            return f"embedded {self.done} passages"
        line = f"embedded {self.done}/{self.total} passages"
        if self.total:
            line += f" ({100 * self.done // self.total}%)"
        rate = self.rate(now)
        if rate and self.done < self.total:
            since = now - self.seen[-1][0]
            line += f", {rate:.1f} passages/s, {clock((self.total - self.done) / rate - since)} left"
        elif rate and self.done >= self.total and len(self.seen) > 1:
            line += f", {self.done / max(now - self.seen[0][0], 1e-9):.1f} passages/s"
        return line

    def _show(self, line: str, force: bool) -> None:
        now = time.monotonic()
        if self.terminal:
            if not force and now - self.last_write < REDRAW_S:
                return
            self.last_write = now
            pad = max(0, self._drawn - len(line))
            self.stream.write("\r" + line + " " * pad)
            self.stream.flush()
            self._drawn = len(line)
            return
        if force or (line != self.last_line and now - self.last_write >= self.every):
            self.stream.write(line + "\n")
            self.stream.flush()
            self.last_line, self.last_write = line, now

    def _tick(self) -> None:
        while not self._stop.wait(max(self.every, 0.05)):
            with self._lock:
                if self.current:
                    continue
                now = time.monotonic()
                if now - self.last_write >= self.every:
                    self._show(self.embedding_line(now), force=True)

    def __enter__(self) -> IngestProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.join(timeout=1)
        if self.terminal and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
