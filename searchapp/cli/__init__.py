"""Command line: each command parses, makes one library call, renders. Errors become one line and exit status
``common.EXIT_ERROR``; a query that finds nothing exits ``EXIT_NO_MATCH``, as grep's (docs/cli.md, "Exit status").

The commands live in modules of this package, each with a ``register(app)`` that adds its commands to the app
it is handed; none imports this module back. A module is imported when one of its commands runs (or its help is
asked), not before: ``searchapp --help`` lists the commands from :data:`COMMANDS` alone, so that a lookup does
not pay for fifteen commands' options and the modules behind them.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, NamedTuple

import typer
from typer.core import TyperCommand, TyperGroup

from searchapp.cli import help as _help

_help.apply()


class Command(NamedTuple):
    """A command as ``searchapp --help`` lists it: the module of this package that declares it (its
    ``register(app)``), the panel it is listed under and its line there (its docstring is its own ``--help``)."""

    module: str
    panel: str
    summary: str


_INDEX, _SEARCH, _LOOK, _SERVE, _MEASURE = "Index", "Search", "Look inside an index", "Serve", "Measure"
# Every command, in the order --help lists them, each line short enough for one line at 80 columns.
# tests/integration/test_cli_commands.py checks that these are the commands the modules register.
COMMANDS: dict[str, Command] = {
    "ingest": Command("ingest_command", _INDEX, "Add new files, replace changed ones and remove deleted ones."),
    "watch": Command("watch_command", _INDEX, "Ingest folders, then keep the index in step with them."),
    "remove": Command("index_commands", _INDEX, "Remove documents: a file, a folder's, or texts by id."),
    "query": Command("query_command", _SEARCH, "Rank passages for a question."),
    "show": Command("show_command", _SEARCH, "Print a passage with the lines around it, or a document."),
    "status": Command("index_commands", _LOOK, "Documents, passages, encoder and size of an index."),
    "documents": Command("index_commands", _LOOK, "List the indexed documents."),
    "collections": Command("index_commands", _LOOK, "List the named collections."),
    "export": Command("index_commands", _LOOK, "Write every document, then every passage, as JSON lines."),
    "lexical-engine": Command("index_commands", _LOOK, "Move a folder index to another lexical engine."),
    "serve": Command("serve_command", _SERVE, "Serve the index over HTTP: a search page, and a JSON API."),
    "mcp": Command("mcp_command", _SERVE, "Serve the index to MCP clients (coding and chat agents)."),
    "eval": Command("eval_commands", _MEASURE, "Score lexical, dense and hybrid retrieval on questions."),
    "tune": Command("eval_commands", _MEASURE, "Search the hybrid fusion settings on labelled queries."),
    "eval-sts": Command("eval_commands", _MEASURE, "Score the embeddings on sentence similarity."),
}


@functools.cache
def _module_commands(module: str) -> dict[str, TyperCommand]:
    """The commands ``searchapp.cli.MODULE`` registers, by name."""
    own = typer.Typer()
    importlib.import_module(f"searchapp.cli.{module}").register(own)
    return dict(typer.main.get_group(own).commands)  # type: ignore[arg-type]


class _Commands(Mapping[str, TyperCommand]):
    """The root's commands by name: iterating names the commands, getting one imports its module."""

    def __getitem__(self, name: str) -> TyperCommand:
        if name not in COMMANDS:
            raise KeyError(name)
        command = _module_commands(COMMANDS[name].module)[name]
        command.rich_help_panel = COMMANDS[name].panel  # type: ignore[attr-defined]
        return command

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)


class _Root(TyperGroup):
    """The root group: commands loaded by name; its help lists them from :data:`COMMANDS`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands()  # type: ignore[assignment]
        self._listing = False

    def list_commands(self, ctx: typer.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: typer.Context, cmd_name: str) -> TyperCommand | None:  # type: ignore[override]
        listed = COMMANDS.get(cmd_name)
        if listed is None:
            return None
        if self._listing:
            return TyperCommand(cmd_name, help=listed.summary, short_help=listed.summary, rich_help_panel=listed.panel)
        return self.commands[cmd_name]

    def format_help(self, ctx: typer.Context, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    cls=_Root,
    no_args_is_help=True,
    add_completion=False,
    help="Semantic search over a folder of documents: ingest it, then query it.",
    epilog="Run searchapp COMMAND --help for a command's options; docs/cli.md has them all.",
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
    from searchapp.cli.common import begin

    begin()


def commands() -> dict[str, TyperCommand]:
    """Every command by name, each loaded (for the tests and tools that walk them all)."""
    return dict(_Commands().items())


def main() -> None:  # pragma: no cover - the `searchapp` command and `python -m searchapp`
    from searchapp.cli.common import reserve_standard_descriptors, run

    reserve_standard_descriptors()
    run(app)
