"""ASGI middleware in front of every route: the API key and the request size limit.

It sits below FastAPI's routing so that it covers everything, the OpenAPI schema and docs pages included, and it
counts the bytes of the body as they arrive instead of trusting Content-Length alone.
"""

from __future__ import annotations

import hmac
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    """The error JSON of every failed request, shaped like OpenAI's so its client reports the message."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class Guard:
    """Refuse requests without ``api_key`` (401) and bodies over ``max_body`` bytes (413)."""

    def __init__(self, app: ASGIApp, api_key: str | None, max_body: int) -> None:
        self.app = app
        self.api_key = api_key.encode() if api_key else None
        self.max_body = max_body

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
        if not self._authorised(headers):
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
