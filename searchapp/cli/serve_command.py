"""``serve``: the HTTP API over one index."""

from __future__ import annotations

import ipaddress
import os
import socket
from typing import Annotated

import typer

from searchapp.cli.common import DEFAULT_INDEX, DeviceOpt, IndexOpt, WaitOpt, errors, say
from searchapp.errors import SearchappError


def register(app: typer.Typer) -> None:
    """Add ``serve`` to ``app``."""
    app.command()(serve)


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port``; ``SearchappError`` with the reason when it cannot be had."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, UnicodeError) as exc:
        raise SearchappError(f"{host}: cannot listen there: {exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise SearchappError(f"{host}:{port}: cannot listen: {exc.strerror or exc}") from exc
    return sock


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    index: IndexOpt = DEFAULT_INDEX,
    host: Annotated[str, typer.Option(help="Address to bind; other than loopback exposes the index.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")] = 8000,
    api_key: Annotated[
        str | None,
        typer.Option(envvar="SEARCHAPP_API_KEY", help="Require 'Authorization: Bearer KEY' on every request."),
    ] = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="Refuse POST/DELETE /documents.")] = False,
    max_body_mb: Annotated[float, typer.Option(min=0.001, help="Largest request body accepted, in MiB.")] = 16.0,
    ui: Annotated[bool, typer.Option("--ui/--no-ui", help="Serve the search page at /.")] = True,
    wait: WaitOpt = 0.0,
    device: DeviceOpt = "auto",
    lazy: Annotated[
        bool, typer.Option("--lazy", help="Load the model on the first query instead of at start.")
    ] = False,
    access_log: Annotated[
        bool, typer.Option("--access-log", help="A line per request on stderr: client, method, path, status, time "
                           "(no query string, headers or body).")
    ] = False,
) -> None:
    """Serve the index over HTTP: a search page at /, and /search, /search/batch, /documents,
    /passages/{id}/context, /status, /v1/embeddings, /v1/models.

    The OpenAPI schema is at /openapi.json and interactive docs at /docs.
    """
    with errors():
        try:
            import uvicorn

            from searchapp.server.app import create_app
        except ImportError as exc:
            raise SearchappError(
                f"serve needs the server extra ({exc.name} is missing): pip install 'searchapp[server]'"
            ) from exc
        from searchapp.encode.device import usable
        from searchapp.index import Index
        from searchapp.store.locate import display, index_exists, is_postgres

        device = usable(device)  # before the port is bound or anything is announced

        if not _is_loopback(host) and not api_key:
            say(f"warning: serving on {host} without an API key; anyone who can reach it can use it, and only "
                "requests addressed to localhost or 127.0.0.1 are answered: set --api-key", err=True)
        shown = display(index) if is_postgres(index) else os.path.abspath(index)
        sock = _listen(host, port)  # before anything is created or announced: a port in use is one line
        # A read-only server must not create anything; a writable one may start from an empty index, and says so.
        if not read_only and not index_exists(index):
            say(f"warning: no index at {shown}: serving a new, empty one", err=True)
        try:
            ix = (Index(index, read_only=True, device=device) if read_only
                  else Index.open_or_create(index, lock_wait=wait, device=device))
        except BaseException:
            sock.close()
            raise
        try:
            if not lazy:
                say("loading the model", err=True)
                ix.warm_up()  # the first query would otherwise wait for it
            application = create_app(ix, api_key=api_key, read_only=read_only, max_body=int(max_body_mb * 2**20),
                                     ui=ui, access_log=access_log)
            page = f"search page: http://{host}:{port}/, " if ui else ""
            say(f"serving {shown} on http://{host}:{port} ({page}API docs: /docs)", err=True)
            uvicorn.Server(uvicorn.Config(application, log_level="warning")).run(sockets=[sock])
        finally:
            sock.close()
            ix.close()
