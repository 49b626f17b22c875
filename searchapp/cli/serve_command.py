"""``serve``: the HTTP API over one index."""

from __future__ import annotations

import ipaddress
import os
from typing import Annotated

import typer

from searchapp.cli.common import DEFAULT_INDEX, IndexOpt, errors, say
from searchapp.errors import SearchappError


def register(app: typer.Typer) -> None:
    """Add ``serve`` to ``app``."""
    app.command()(serve)


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
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    api_key: Annotated[
        str | None,
        typer.Option(envvar="SEARCHAPP_API_KEY", help="Require 'Authorization: Bearer KEY' on every request."),
    ] = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="Refuse POST/DELETE /documents.")] = False,
    max_body_mb: Annotated[float, typer.Option(help="Largest request body accepted, in MiB.")] = 16.0,
) -> None:
    """Serve the index over HTTP: /search, /search/batch, /documents, /status, /v1/embeddings, /v1/models.

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
        from searchapp.index import Index
        from searchapp.store.locate import display, is_postgres

        if not _is_loopback(host) and not api_key:
            say(f"warning: serving on {host} without an API key; anyone who can reach it can use it, and only "
                "requests addressed to localhost or 127.0.0.1 are answered: set --api-key", err=True)
        # A read-only server must not create anything; a writable one may start from an empty index.
        ix = Index(index, read_only=True) if read_only else Index.open_or_create(index)
        try:
            application = create_app(ix, api_key=api_key, read_only=read_only, max_body=int(max_body_mb * 2**20))
            shown = display(index) if is_postgres(index) else os.path.abspath(index)
            say(f"serving {shown} on http://{host}:{port} (docs: /docs)", err=True)
            uvicorn.run(application, host=host, port=port, log_level="warning")
        finally:
            ix.close()
