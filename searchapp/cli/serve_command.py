"""``serve``: the HTTP API over one index."""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from searchapp.cli.common import display_path, errors, say
from searchapp.cli.options import DEFAULT_INDEX, DeviceOpt, IndexOpt, WaitOpt
from searchapp.cli.watch_command import PollOpt, real_folders, stopped_by_signals, watcher
from searchapp.errors import ConfigError, SearchappError, first_line
from searchapp.extras import missing
from searchapp.setting import MAX_FILE_MB

if TYPE_CHECKING:
    from searchapp.index import Index
    from searchapp.ingest.watch import Watcher


def register(app: typer.Typer) -> None:
    """Add ``serve`` to ``app``."""
    app.command()(serve)


def listen(host: str, port: int) -> socket.socket:
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


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address to bind) is this machine's loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# What `serve` and `mcp --transport http` share: where they listen and the key they ask for.
HostOpt = Annotated[str, typer.Option(help="Address to bind; other than loopback exposes the index.")]
PortOpt = Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")]
ApiKeyOpt = Annotated[
    str | None,
    typer.Option(envvar="SEARCHAPP_API_KEY", help="Require 'Authorization: Bearer KEY' on every request."),
]
LazyOpt = Annotated[bool, typer.Option("--lazy", help="Load the model on the first query instead of at start.")]


def warn_if_exposed(host: str, api_key: str | None) -> None:
    """The warning for a server bound beyond loopback without a key (the guard answers loopback names only)."""
    if not is_loopback(host) and not api_key:
        say(f"warning: serving on {host} without an API key; anyone who can reach it can use it, and only "
            "requests addressed to localhost or 127.0.0.1 are answered: set --api-key", err=True)


def open_index(index: str, read_only: bool, wait: float, lazy: bool, device: str = "auto") -> tuple[Index, str]:
    """The index a server serves, and how it is shown: a read-only server's must exist, a writable one's is made
    when missing (with a warning); the model loaded unless ``lazy`` (the first query would otherwise wait), to
    embed on ``device``."""
    from searchapp.index import Index
    from searchapp.store.locate import display, index_exists, is_postgres

    shown = display(index) if is_postgres(index) else os.path.abspath(index)
    # A read-only server must not create anything; a writable one may start from an empty index, and says so.
    if not read_only and not index_exists(index):
        say(f"warning: no index at {shown}: serving a new, empty one", err=True)
    ix = (Index(index, read_only=True, device=device) if read_only
          else Index.open_or_create(index, lock_wait=wait, device=device))
    if not lazy:
        try:
            say("loading the model", err=True)
            ix.warm_up()
        except BaseException:
            ix.close()
            raise
    return ix, shown


def run_asgi(application: Any, sock: socket.socket, until: threading.Event | None = None) -> None:
    """Serve ``application`` with uvicorn on the listening ``sock`` until interrupted (or ``until`` is set: then it
    stops as on SIGTERM), with ``server/serving.py``'s limits (a deadline on a request's headers, a connection cap,
    repeated log lines once per 10 s)."""
    import uvicorn

    from searchapp.server import serving

    server = uvicorn.Server(serving.config(application, log_level="warning"))
    if until is not None:
        def stop_when_set() -> None:
            until.wait()
            server.should_exit = True  # seen by uvicorn's main loop within 0.1 s; a graceful shutdown follows

        threading.Thread(target=stop_when_set, name="searchapp-serve-until", daemon=True).start()
    server.run(sockets=[sock])


def serve(
    index: IndexOpt = DEFAULT_INDEX,
    host: HostOpt = "127.0.0.1",
    port: PortOpt = 8000,
    api_key: ApiKeyOpt = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="Refuse POST/DELETE /documents.")] = False,
    max_body_mb: Annotated[
        float, typer.Option(min=0.001, max=MAX_FILE_MB, help="Largest request body accepted, in MiB.")
    ] = 16.0,
    ui: Annotated[bool, typer.Option("--ui/--no-ui", help="Serve the search page at /.")] = True,
    wait: WaitOpt = 0.0,
    device: DeviceOpt = "auto",
    lazy: LazyOpt = False,
    access_log: Annotated[
        bool, typer.Option("--access-log", help="A line per request on stderr: client, method, path, status, time "
                           "(no query string, headers or body).")
    ] = False,
    watch: Annotated[
        list[Path] | None,
        typer.Option("--watch", metavar="DIR", help="Ingest this folder and keep the index in step with it while "
                     "serving, as `searchapp watch` does (repeatable)."),
    ] = None,
    poll: PollOpt = None,
) -> None:
    """Serve the index over HTTP: a search page at /, and /search, /search/batch, /documents,
    /passages/{id}/context, /status, /v1/embeddings, /v1/models.

    The OpenAPI schema is at /openapi.json.
    """
    with errors():
        try:
            import uvicorn  # noqa: F401  (run_asgi's, asked for here so that a missing one is this message)

            from searchapp.server.app import create_app
        except ImportError as exc:
            raise missing("server", "serve", exc) from exc
        from searchapp.encode.device import usable

        device = usable(device)  # before the port is bound or anything is announced
        warn_if_exposed(host, api_key)
        if watch and read_only:
            raise ConfigError("--watch writes to the index: it cannot go with --read-only")
        roots = real_folders(watch or [], index)
        sock = listen(host, port)  # before anything is created or announced: a port in use is one line
        try:
            ix, shown = open_index(index, read_only, wait, lazy, device)
        except BaseException:
            sock.close()
            raise
        for warning in ix.stores.facts().get("warnings", []):  # type: ignore[attr-defined]
            say(f"warning: {warning}", err=True)
        try:
            application = create_app(ix, api_key=api_key, read_only=read_only, max_body=int(max_body_mb * 2**20),
                                     ui=ui, access_log=access_log)
            stop = threading.Event()
            follower = watcher(ix, roots, stop, poll=poll) if roots else None
            page = f"search page: http://{host}:{port}/, " if ui else ""
            say(f"serving {shown} on http://{host}:{port} ({page}OpenAPI schema: /openapi.json)", err=True)
            with beside(follower) as ended:
                run_asgi(application, sock, until=ended)
        finally:
            sock.close()
            ix.close()


@contextmanager
def beside(follower: Watcher | None) -> Iterator[threading.Event]:
    """Run ``follower`` on its own thread while the block runs (the server), and stop it after, once its write
    session in progress is committed. The event yielded is set when the watcher's thread ends: the server is
    to stop then, and the block's end raises ``SearchappError`` with the watcher's reason, so that a server whose
    index no longer follows its folders ends with an error instead of serving on as if it did."""
    ended = threading.Event()
    if follower is None:
        yield ended
        return
    failure: list[BaseException] = []

    def run() -> None:
        try:
            follower.run()
        except BaseException as exc:  # whatever it is, said once below, in the server's thread
            failure.append(exc)
        finally:
            ended.set()

    thread = threading.Thread(target=run, name="searchapp-watcher", daemon=True)
    say(f"watching {', '.join(display_path(str(f)) for f in follower.folders)}", err=True)
    thread.start()
    try:
        # uvicorn raises the signal that stopped it again once it is done; it then stops the watcher, which ends
        # its session in progress before the process exits.
        with stopped_by_signals(follower.stop):
            yield ended
    finally:
        follower.stop.set()
        thread.join()
    if failure:
        exc = failure[0]
        reason = str(exc) if isinstance(exc, SearchappError) else f"{type(exc).__name__}: {first_line(exc)}"
        raise SearchappError(f"{reason}; the server stopped too: its index no longer followed the folders")
