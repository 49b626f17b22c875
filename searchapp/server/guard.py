"""ASGI middleware in front of every route: the API key (or, without one, loopback host names only) and the
request size limit.

It sits below FastAPI's routing so that it covers everything, the OpenAPI schema and docs pages included, and it
counts the bytes of the body as they arrive instead of trusting Content-Length alone.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    """The error JSON of every failed request, shaped like OpenAI's so its client reports the message."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def loopback_host(value: bytes) -> bool:
    """Whether a ``Host`` header names this machine's loopback: ``localhost``, an address of 127/8 or ``[::1]``,
    with or without a port."""
    try:
        host = value.decode("ascii").lower()
    except UnicodeDecodeError:
        return False
    if host.startswith("["):
        name, bracket, port = host[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            return False
        port = port[1:]
    else:
        name, _, port = host.partition(":")
    if port and not port.isdigit():
        return False
    if name in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class Guard:
    """Refuse requests without ``api_key`` (401), or without one any not addressed to a loopback name (403),
    and bodies over ``max_body`` bytes (413).

    ``public``: paths a ``GET`` (or ``HEAD``) may fetch without the key: the search page's own files, which hold
    no index data and must load in the browser before it can ask for the key. The loopback rule still applies.
    """

    def __init__(self, app: ASGIApp, api_key: str | None, max_body: int, public: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.api_key = api_key.encode() if api_key else None
        self.max_body = max_body
        self.public = public

    def _authorised(self, headers: dict[bytes, bytes]) -> bool:
        if self.api_key is None:
            return True
        auth = headers.get(b"authorization", b"")
        given = auth[7:].strip() if auth[:7].lower() == b"bearer " else headers.get(b"x-api-key", b"")
        return hmac.compare_digest(given, self.api_key)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        # A keyless server trusts whoever reaches it, which a web page can through DNS rebinding: its own name,
        # re-pointed at 127.0.0.1, arrives as the Host. Browsers always send the name they resolved.
        if self.api_key is None and not loopback_host(headers.get(b"host", b"")):
            shown = headers.get(b"host", b"").decode("ascii", "replace")[:100]
            response = JSONResponse(
                error_body(f"Host {shown!r} refused: without an API key this server answers only requests "
                           "addressed to localhost, 127.0.0.1 or [::1] (a guard against DNS rebinding); start it "
                           "with --api-key to serve other names", "permission_error", "invalid_host"),
                status_code=403,
            )
            await response(scope, receive, send)
            return
        public = scope["method"] in ("GET", "HEAD") and scope["path"] in self.public
        if not public and not self._authorised(headers):
            response = JSONResponse(
                error_body("missing or wrong API key: send 'Authorization: Bearer KEY'", "authentication_error",
                           "invalid_api_key"),
                status_code=401, headers={"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            await self._too_large(scope, receive, send)
            return
        # Read the body here, up to the limit, and replay it: a body that goes over is refused before any route
        # sees a byte of it, whatever Content-Length said (or whether it was sent at all).
        chunks: list[bytes] = []
        received = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away mid-body: never run a route on part of one
            chunks.append(message.get("body", b""))
            received += len(chunks[-1])
            if received > self.max_body:
                await self._too_large(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = JSONResponse(
            error_body(f"request body over the limit of {self.max_body} bytes", "invalid_request_error",
                       "request_too_large"),
            status_code=413,
        )
        await response(scope, receive, send)
