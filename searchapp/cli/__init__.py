"""Command line: each command parses, makes one library call, renders. Errors become one line and exit status
``common.EXIT_ERROR``; a query that finds nothing exits ``EXIT_NO_MATCH``, as grep's (docs/cli.md, "Exit status").

The commands live in modules of this package, each with a ``register(app)`` that adds its commands to the app
it is handed; none imports this module back.
"""

from __future__ import annotations

from typing import Annotated

import typer

from searchapp.cli import (
    eval_commands,
    index_commands,
    ingest_command,
    mcp_command,
    query_command,
    serve_command,
    show_command,
    watch_command,
)
from searchapp.cli import help as _help
from searchapp.cli.common import begin, reserve_standard_descriptors, run

_help.apply()

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Semantic search over a folder of documents: ingest it, then query it.",
    context_settings={"help_option_names": ["-h", "--help"]},  # inherited by every command
)


def _version(value: bool) -> None:
    if value:
        from searchapp import __version__

        typer.echo(f"searchapp {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Semantic search over a folder of documents: ingest it, then query it."""
    begin()
for _module in (ingest_command, query_command, index_commands, show_command, eval_commands, serve_command,
                watch_command, mcp_command):
    _module.register(app)


def main() -> None:  # pragma: no cover - the `searchapp` command and `python -m searchapp`
    reserve_standard_descriptors()
    run(app)
