"""How many sessions the MCP streamable HTTP transport keeps, per client and in all, and how long an idle one
lives.

The SDK's session manager refuses every new session (503) once ``max_sessions`` are open, and closes a session
only after ``session_idle_timeout`` without a request (30 minutes by its defaults). Opening a session is one
``initialize`` POST, so whoever may send requests could fill the table and lock every other client out for that
long. :class:`SessionLimits` sits in front of it and keeps its own ledger of the sessions, in order of last use:

- a client holds at most ``per_client`` sessions: opening one more closes its own least recently used idle one;
- the server holds at most ``total``: opening one more closes the least recently used idle one of any client;
- a session idle for ``idle_timeout`` seconds is closed (by the SDK's own timer, with the same setting; the
  ledger closes it too when it next looks);
- only when every session that would have to go is busy (a request in flight, a GET stream open) is the opening
  request refused: 503, naming the limit.

A client is the peer's IP address. The API key cannot tell clients apart (the server has one, which every
client sends), and without one the server answers loopback only, where every local client is 127.0.0.1 (or ::1):
they share the per-client bound, and an idle session of theirs can be closed by another's opening, after which
its client gets 404 and opens a new one, as the protocol has it. Idle sessions are what a flood of ``initialize``
requests leaves, so it closes its own.

Sessions are closed as a client closes one, by a ``DELETE`` with its id, sent to the SDK's app (below the
guard): the ledger uses nothing of the SDK but its HTTP protocol. This module imports nothing but the standard
library (and ``searchapp.errors``), so the CLI can read its bounds without the ``mcp`` extra.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from searchapp.errors import ConfigError

log = logging.getLogger(__name__)

DEFAULT_IDLE_TIMEOUT_S = 300  # a session without a request for this long is closed
MAX_IDLE_TIMEOUT_S = 3600
SESSIONS_PER_CLIENT = 32
MAX_SESSIONS = 256  # some 40 KB each on the SDK's side (10,000 took 400 MB)
SESSION_HEADER = b"mcp-session-id"
_SERVER_ERROR = -32000  # JSON-RPC's range for a server's own errors


def check_idle_timeout(seconds: float) -> float:
    """``seconds`` if it is a usable idle timeout (over 0, at most ``MAX_IDLE_TIMEOUT_S``); ``ConfigError`` if
    not."""
    if not 0 < seconds <= MAX_IDLE_TIMEOUT_S:
        raise ConfigError(f"idle timeout {seconds!r}: must be over 0 and at most {MAX_IDLE_TIMEOUT_S:g} seconds")
    return seconds


@dataclass
class _Session:
    client: str
    last_used: float
    in_flight: int = 0


def _client(scope: dict[str, Any]) -> str:
    peer = scope.get("client")
    return str(peer[0]) if peer else ""


class SessionLimits:
    """ASGI middleware over the SDK's streamable HTTP app (``path``): the bounds above, kept by a ledger of
    session ids in order of last use (least recent first)."""

    def __init__(self, app: Any, path: str, *, idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
                 per_client: int = SESSIONS_PER_CLIENT, total: int = MAX_SESSIONS) -> None:
        if not 1 <= per_client <= total:
            raise ConfigError(f"sessions per client {per_client} and in all {total}: need 1 <= per client <= all")
        self.app = app
        self.path = path
        self.idle_timeout = check_idle_timeout(idle_timeout)
        self.per_client = per_client
        self.total = total
        self.sessions: OrderedDict[str, _Session] = OrderedDict()
        self.opening: Counter[str] = Counter()  # opening requests in flight, per client

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(SESSION_HEADER)
        if given is None:
            await self._open(_client(scope), scope, receive, send)
        else:
            await self._use(given.decode("latin-1"), scope, receive, send)

    async def _use(self, session_id: str, scope: dict[str, Any], receive: Any, send: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:  # unknown here, so to the SDK too: it answers 404
            await self.app(scope, receive, send)
            return
        session.in_flight += 1
        self.sessions.move_to_end(session_id)
        status = 0

        def done() -> None:
            session.in_flight -= 1
            session.last_used = time.monotonic()
            ended = status == 404 or (scope["method"] == "DELETE" and 200 <= status < 300)
            if ended and self.sessions.get(session_id) is session:
                del self.sessions[session_id]

        async def watch(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await _until_answered(self.app, scope, receive, send=watch, done=done)

    async def _open(self, client: str, scope: dict[str, Any], receive: Any, send: Any) -> None:
        victims, refusal = self._make_room(client)
        for session_id in victims:
            await self._close(session_id, scope)
        if refusal is not None:
            log.info("MCP session refused to %s: %s", client or "a client", refusal)  # a flood must not flood stderr
            await _refuse(refusal, send)
            return
        self.opening[client] += 1
        pending = True  # counted in self.opening, until it is a session in the ledger or has failed
        opened: _Session | None = None

        def settle() -> None:
            nonlocal pending
            if pending:
                pending = False
                self.opening[client] -= 1
                if not self.opening[client]:
                    del self.opening[client]

        def done() -> None:
            settle()
            if opened is not None:
                opened.in_flight -= 1
                opened.last_used = time.monotonic()

        async def watch(message: dict[str, Any]) -> None:
            nonlocal opened
            if message["type"] == "http.response.start" and message["status"] < 400:
                given = dict(message.get("headers", [])).get(SESSION_HEADER)
                if given is not None:
                    opened = self.sessions[given.decode("latin-1")] = _Session(client, time.monotonic(), in_flight=1)
                    settle()
            await send(message)

        await _until_answered(self.app, scope, receive, send=watch, done=done)

    def _make_room(self, client: str) -> tuple[list[str], str | None]:
        """The sessions to close so that ``client`` may open one (taken out of the ledger now, so two openings
        never count the same room), and why it may not, if it may not. No awaits: one opening at a time."""
        now = time.monotonic()
        victims = [sid for sid, s in self.sessions.items()
                   if not s.in_flight and now - s.last_used >= self.idle_timeout]
        for sid in victims:
            del self.sessions[sid]
        refusal = None
        held = sum(s.client == client for s in self.sessions.values()) + self.opening[client]
        if held >= self.per_client:
            own = self._least_recent_idle(client)
            if own is None:
                refusal = (f"this client holds {held} MCP sessions, all in use (at most {self.per_client} per "
                           "client): close one, or wait for one to end")
            else:
                victims.append(own)
                del self.sessions[own]
        if refusal is None and len(self.sessions) + sum(self.opening.values()) >= self.total:
            other = self._least_recent_idle(None)
            if other is None:
                refusal = f"{self.total} MCP sessions are open, all in use: try again later"
            else:
                victims.append(other)
                del self.sessions[other]
        return victims, refusal

    def _least_recent_idle(self, client: str | None) -> str | None:
        return next((sid for sid, s in self.sessions.items()
                     if not s.in_flight and (client is None or s.client == client)), None)

    async def _close(self, session_id: str, scope: dict[str, Any]) -> None:
        """End a session as its client would, with a DELETE to the SDK's app (already gone: it answers 404)."""
        request = {**scope, "method": "DELETE", "query_string": b"",
                   "headers": [(b"host", dict(scope["headers"]).get(b"host", b"localhost")),
                               (SESSION_HEADER, session_id.encode("latin-1"))]}
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": b"", "more_body": False}
            return {"type": "http.disconnect"}

        async def discard(message: dict[str, Any]) -> None:
            pass

        import anyio  # the SDK's; not at the top, where the CLI reads the bounds without it

        # Out of the ledger already: it must leave the SDK's table too, even if the opening request is cancelled.
        with anyio.CancelScope(shield=True):
            await self.app(request, receive, discard)
        log.info("MCP session %s closed (idle)", session_id[:64])


async def _until_answered(app: Any, scope: dict[str, Any], receive: Any, *, send: Any,
                          done: Callable[[], None]) -> None:
    """Run ``app`` on the request and call ``done`` once, when its answer's last byte is sent (the client may ask
    again at once, before ``app`` returns) or when ``app`` ends without one."""
    called = False

    def once() -> None:
        nonlocal called
        if not called:
            called = True
            done()

    async def watch(message: dict[str, Any]) -> None:
        await send(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            once()

    try:
        await app(scope, receive, watch)
    finally:
        once()


async def _refuse(message: str, send: Any) -> None:
    """A 503 whose body is a JSON-RPC error without an id, as the SDK answers its own refusals."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": _SERVER_ERROR, "message": message}}).encode()
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"retry-after", b"1")]})
    await send({"type": "http.response.body", "body": body})
