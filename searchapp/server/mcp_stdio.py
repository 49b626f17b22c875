"""MCP over stdin/stdout with every line answered.

The SDK's stdio transport reads each line as a JSON-RPC message and drops one it cannot read without a word (it
only logs it), and it takes a few malformed ones for notifications, which get no answer either (an object ``id``,
a ``params`` string on a message with an ``id``): the client then waits forever on the request it sent. Here each
line is checked before the SDK sees it, by JSON-RPC 2.0's rules as MCP narrows them (one message per line, no
batches; an ``id`` is a string or an integer; ``params`` an object):

- not JSON (or not one JSON value, or NaN/Infinity): ``-32700`` (parse error), ``id`` null;
- JSON but not a message the SDK serves (an array, a non-object, no ``method``, ``params`` not an object, an
  ``id`` neither string nor integer, a string holding a lone surrogate, which no UTF-8 text can carry):
  ``-32600`` (invalid request), with the message's ``id`` where it can be read and echoed, else null.

The answer goes out through the SDK's own writer, and the line is withheld from the SDK; the server goes on with
the next line. Blank lines are no message and are skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from io import TextIOWrapper
from typing import IO, Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from searchapp.errors import SearchappError


def _not_a_number(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _echoable(value: Any) -> bool:
    """Whether ``value`` is an ``id`` MCP accepts (a string or an integer, not a bool) and can write back."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return False
    return not isinstance(value, str) or _unicode(value)


def _unicode(value: Any) -> bool:
    """Whether every string in ``value`` (keys too) is Unicode text: no lone surrogate (``"\\ud800"`` is valid
    JSON to Python's reader but not UTF-8, and the SDK's reader refuses it)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _invalid(message: Any) -> str | None:
    """Why a parsed line is no JSON-RPC message MCP serves, or ``None`` when its shape is one."""
    if isinstance(message, list):
        return "a batch (a JSON array): MCP takes one message per line"
    if not isinstance(message, dict):
        return f"a JSON {type(message).__name__} is no message: an object is expected"
    if message.get("jsonrpc") != "2.0":
        return '"jsonrpc" must be "2.0"'
    if not _unicode(message):
        return "a string holds a lone surrogate (\\ud800-\\udfff), which is not Unicode text"
    if "id" in message and not _echoable(message["id"]):
        return '"id" must be a string or an integer'
    if "method" in message:
        if not isinstance(message["method"], str):
            return '"method" must be a string'
        if "params" in message and not isinstance(message["params"], dict):
            return '"params" must be an object'
    elif "result" not in message and "error" not in message:
        return '"method" is missing'
    return None


def line_error(line: str) -> types.JSONRPCError | None:
    """The error answering ``line``, or ``None`` when the SDK reads it as a message."""
    try:
        message = json.loads(line, parse_constant=_not_a_number)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past the reader's depth
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return types.JSONRPCError(jsonrpc="2.0", id=None,
                                  error=types.ErrorData(code=types.PARSE_ERROR, message=f"Parse error: {reason}"))
    reason = _invalid(message)
    if reason is None:
        try:  # the SDK's own reading, for whatever its models refuse beyond the shape checked above
            types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValidationError:
            reason = "not a JSON-RPC 2.0 request, notification or response as MCP defines them"
    if reason is None:
        return None
    request_id = message.get("id") if isinstance(message, dict) and _echoable(message.get("id")) else None
    return types.JSONRPCError(jsonrpc="2.0", id=request_id,
                              error=types.ErrorData(code=types.INVALID_REQUEST, message=f"Invalid Request: {reason}"))


class AnsweredLines:
    """An input's lines as the SDK's stdio reader takes them (``async for``), less the blank and malformed ones;
    each malformed one is answered on the write stream given to :meth:`answer_on`."""

    def __init__(self, lines: AsyncIterable[str]) -> None:
        self._lines = lines
        self._out: Any = None  # the SDK's write stream, once it exists
        self._ready = anyio.Event()

    def answer_on(self, write: Any) -> None:
        self._out = write
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._lines:
            if not line.strip():
                continue
            error = line_error(line)
            if error is None:
                yield line
                continue
            await self._ready.wait()
            try:
                await self._out.send(SessionMessage(error))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return  # the server has ended: nobody is left to answer


@contextmanager
def _protocol_stdin() -> Iterator[IO[bytes]]:
    """The client's input: a private duplicate of fd 0, with fd 0 itself pointed at the null device while serving
    (and restored after), so that nothing a tool runs can read the client's lines; as the SDK does when it reads
    stdin itself, which it does only when it is not handed a stream."""
    try:
        private = os.dup(0)
    except OSError as exc:
        raise SearchappError("stdin is closed: an MCP client talks to `searchapp mcp` over its stdin and stdout"
                             ) from exc
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        # closefd=False: a worker thread may still block reading it after the server ends; it must not be closed
        # (and its number reused) under that thread. One descriptor, once per process.
        yield os.fdopen(private, "rb", closefd=False)
    finally:
        os.dup2(private, 0)


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport (``mcp.server.stdio.stdio_server``) on stdin's checked lines: the (read, write)
    streams a ``Server`` runs on."""
    from mcp.server.stdio import stdio_server

    with _protocol_stdin() as raw:
        # As the SDK reads stdin: UTF-8 whatever the locale, undecodable bytes replaced (then checked as JSON).
        lines = AnsweredLines(anyio.wrap_file(TextIOWrapper(raw, encoding="utf-8", errors="replace")))
        async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
            lines.answer_on(write)
            yield read, write
