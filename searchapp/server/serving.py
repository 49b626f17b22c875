"""How the HTTP server runs: uvicorn with the limits that keep slow or many clients from exhausting it.

uvicorn times out an idle keep-alive connection but not a request whose headers never finish, and counts
connections only once a request has arrived, so clients that send headers a byte at a time (or never) would hold
connections, and then every file descriptor, for ever; past the descriptors, every refused ``accept()`` is a
traceback on stderr. Here each connection has ``HEADER_TIMEOUT`` seconds to send a request's headers (from its
start, or from the first byte of its next request), connections beyond the cap are closed at once, and repeated
log lines are written once per ``LOG_EVERY`` seconds with a count of those left out.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import threading
import time
from typing import Any

import h11
from uvicorn import Config
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT = 10.0  # seconds a client has to send a request's headers
KEEP_ALIVE = 5  # seconds an idle keep-alive connection is kept
MAX_CONNECTIONS = 1000  # open connections at once, at most (fewer where the descriptor limit is lower)
RESERVED_FDS = 128  # descriptors left for the index, the model, the thread pool, logs
# Connections accepted in one go (asyncio takes up to its backlog per wake-up before any is set up and counted, so
# this many may be open beyond the cap for a moment; it is also the listen queue).
ACCEPT_BATCH = RESERVED_FDS // 2
LOG_EVERY = 10.0  # seconds between two copies of one log message


def connection_cap() -> int:
    """The most connections served at once: ``MAX_CONNECTIONS``, or fewer so that they and ``RESERVED_FDS``
    fit in this process's descriptor limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(1, min(MAX_CONNECTIONS, soft - RESERVED_FDS))


class _Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on a request's headers and a cap on open connections."""

    cap = MAX_CONNECTIONS
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.cap:
            _LOG.warning("%d connections open: new ones are closed until some end", self.cap)
            transport.abort()
            return
        self._await_headers()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the headers are in (the body and the app have other limits)
            self._stop_timer()
        elif self._header_timer is None:  # the first bytes of the next request on a kept-alive connection
            self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        super().connection_lost(exc)

    def _await_headers(self) -> None:
        self._stop_timer()
        self._header_timer = self.loop.call_later(HEADER_TIMEOUT, self._headers_late)

    def _stop_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.abort()  # silently: a line each would be the flood this prevents


class _OncePer(logging.Filter):
    """Lets one record of each message through per ``LOG_EVERY`` seconds; the next one says how many were left
    out meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        # By the first line: asyncio's lines go on with the socket, a text of its own each time.
        key = f"{record.name}:{str(record.msg).partition(chr(10))[0]}"
        now = time.monotonic()
        with self._lock:
            last, dropped = self._seen.get(key, (-LOG_EVERY, 0))
            if now - last < LOG_EVERY:
                self._seen[key] = (last, dropped + 1)
                return False
            if len(self._seen) > 1000:  # messages with their own text each (addresses): forget the old ones
                self._seen.clear()
            self._seen[key] = (now, 0)
        if record.exc_info and record.name == "asyncio" and record.exc_info[1] is not None:
            # asyncio's refused accept() (out of descriptors) is the machine's state, not a bug: its reason in
            # the line, without the traceback it would print each time.
            exc = record.exc_info[1]
            record.msg = f"{record.msg}: {type(exc).__name__}: {exc}"
            record.exc_info, record.exc_text = None, None
        if dropped:
            record.msg = f"{record.msg} ({dropped} more like this in the last {now - last:.0f} s)"
        return True


_LOG = logging.getLogger("uvicorn.error")
_FILTER = _OncePer()


def config(app: Any, **options: Any) -> Config:
    """The uvicorn ``Config`` for ``app`` with this module's limits (``options``: more of uvicorn's settings)."""
    cap = connection_cap()
    protocol = type("SearchappH11", (_Protocol,), {"cap": cap})
    for name in ("uvicorn.error", "asyncio"):  # uvicorn's warnings per bad request; asyncio's refused accept()
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
    return Config(app, http=protocol, timeout_keep_alive=KEEP_ALIVE, limit_concurrency=cap, backlog=ACCEPT_BATCH,
                  **options)
