"""An optional access log: one line per request on a stream (stderr by default), ``searchapp serve --access-log``.

A line holds the client address, method, path, status and time taken, and nothing a request carries as data:
not the query string, headers (the API key is one) or body (texts and queries are the users' data).
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

Scope = dict[str, Any]
Receive = Any
Send = Any


class AccessLog:
    """ASGI middleware writing ``CLIENT "METHOD PATH" STATUS MILLISECONDSms`` for every HTTP request to ``stream``
    (outermost, so requests the key guard refuses are logged too)."""

    def __init__(self, app: Any, stream: TextIO | None = None) -> None:
        self.app = app
        self.stream = stream

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]  # what the client gets if the app fails before it answers

        async def record(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, record)
        finally:
            client = scope.get("client") or ("-", 0)
            # The path as sent, escaped (a request line is the client's to choose: no control characters written).
            path = scope.get("path", "").encode("unicode_escape").decode("ascii")
            ms = (time.perf_counter() - started) * 1000
            stream = self.stream or sys.stderr
            stream.write(f'{client[0]} "{scope.get("method", "-")} {path}" {status[0]} {ms:.0f}ms\n')
            stream.flush()
