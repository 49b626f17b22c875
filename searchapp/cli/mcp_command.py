"""``mcp``: the index as an MCP server for agents (server/mcp_server.py), over stdio or streamable HTTP."""

from __future__ import annotations

from typing import Annotated

import typer

from searchapp.cli.common import errors, say
from searchapp.cli.options import DEFAULT_INDEX, IndexOpt, WaitOpt
from searchapp.cli.serve_command import (
    ApiKeyOpt,
    HostOpt,
    LazyOpt,
    PortOpt,
    listen,
    open_index,
    run_asgi,
    warn_if_exposed,
)
from searchapp.errors import SearchappError
from searchapp.extras import missing
from searchapp.server.mcp_sessions import DEFAULT_IDLE_TIMEOUT_S, MAX_IDLE_TIMEOUT_S, MAX_SESSIONS, SESSIONS_PER_CLIENT

TRANSPORTS = ("stdio", "http")


def register(app: typer.Typer) -> None:
    """Add ``mcp`` to ``app``."""
    app.command()(mcp)


def mcp(
    index: IndexOpt = DEFAULT_INDEX,
    transport: Annotated[
        str, typer.Option(help=f"{', '.join(TRANSPORTS)}: stdin/stdout for a client that starts the server, or "
                          "streamable HTTP at /mcp.")
    ] = "stdio",
    allow_writes: Annotated[
        bool, typer.Option("--allow-writes", help="Add the add_texts and remove tools (texts only, as over HTTP).")
    ] = False,
    host: HostOpt = "127.0.0.1",
    port: PortOpt = 8000,
    api_key: ApiKeyOpt = None,
    idle_timeout: Annotated[
        float, typer.Option(min=1, max=MAX_IDLE_TIMEOUT_S, metavar="SECONDS",
                            help=f"--transport http: close a session after this long without a request (each client "
                            f"holds at most {SESSIONS_PER_CLIENT} sessions, the server {MAX_SESSIONS}).")
    ] = DEFAULT_IDLE_TIMEOUT_S,
    wait: WaitOpt = 0.0,
    lazy: LazyOpt = False,
) -> None:
    """Serve the index to MCP clients (coding and chat agents): tools search, get_document, get_passage_context,
    list_documents, index_status; add_texts and remove with --allow-writes.

    --host, --port, --api-key and --idle-timeout apply to --transport http. docs/rag.md shows a client's configuration.
    """
    with errors():
        if transport not in TRANSPORTS:
            raise SearchappError(f"unknown transport {transport!r}: use one of {', '.join(TRANSPORTS)}")
        try:
            import anyio

            from searchapp.server.mcp_server import MCP_PATH, create_http_app, create_server, run_stdio
        except ImportError as exc:
            raise missing("mcp", "mcp", exc) from exc
        sock = None
        if transport == "http":
            warn_if_exposed(host, api_key)
            sock = listen(host, port)  # before anything is opened or announced: a port in use is one line
        try:
            ix, shown = open_index(index, read_only=not allow_writes, wait=wait, lazy=lazy)
        except BaseException:
            if sock is not None:
                sock.close()
            raise
        try:
            server = create_server(ix, allow_writes=allow_writes)
            writes = "with" if allow_writes else "without"
            if sock is None:
                say(f"serving {shown} over MCP on stdio ({writes} writes)", err=True)
                try:
                    anyio.run(run_stdio, server)
                except KeyboardInterrupt:  # Ctrl-C where it was started by hand: an end, not a traceback
                    pass
            else:
                say(f"serving {shown} over MCP at http://{host}:{port}{MCP_PATH} ({writes} writes)", err=True)
                run_asgi(create_http_app(server, api_key=api_key, idle_timeout=idle_timeout), sock)
        finally:
            if sock is not None:
                sock.close()
            ix.close()
