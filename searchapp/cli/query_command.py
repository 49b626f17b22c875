"""``searchapp query``: one query, several (``--file``), or the standard input's lines; hits rendered by
``cli/render.py``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from searchapp.cli.common import EXIT_NO_MATCH, errors, say
from searchapp.cli.help import examples
from searchapp.cli.options import DEFAULT_INDEX, IndexOpt, JsonOpt, fusion_options, search_options
from searchapp.cli.render import render_hits
from searchapp.errors import SearchappError
from searchapp.filters import Filter
from searchapp.keyvalue import parse_choices
from searchapp.paths import own_path
from searchapp.types import EXACT, TextForm


def register(app: typer.Typer) -> None:
    """Add ``query`` to ``app``."""
    app.command(epilog=examples(
        "searchapp query how do I rotate the signing keys",
        "searchapp query 'signing keys' -k 5 --collection guides",
        "searchapp query SESSION_COOKIE_SECURE --mode lexical --json",
    ))(query)


@fusion_options()
@search_options(own={"filters": ("filter_", "path_prefix", "path_glob", "collection")}, short={"k": "-k"})
def query(
    text: Annotated[list[str] | None, typer.Argument(
        help="The question or keywords (quoted or not: the words are joined by spaces).", show_default=False)] = None,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Run every line of this file as a query (batched).")
    ] = None,
    index: IndexOpt = DEFAULT_INDEX,
    filter_: Annotated[
        list[str] | None,
        typer.Option("--filter", help="Metadata KEY=VALUE the documents must have (repeatable; a repeated KEY "
                     "means any of its values; VALUE is read as JSON when it parses, else as a string)."),
    ] = None,
    path_prefix: Annotated[
        str | None, typer.Option(help="Only documents under this path (a folder or file; or a text id prefix).")
    ] = None,
    path_glob: Annotated[str | None, typer.Option(help="Only documents whose full path matches this glob.")] = None,
    collection: Annotated[
        str | None, typer.Option(help="Only documents of this named collection (ingest --collection).")
    ] = None,
    text_form: Annotated[
        TextForm, typer.Option("--text", help="The passage text the table and --json show: exact (as stored, markup "
                               "blanked to spaces; --json's start and end index it) or clean (blanks collapsed, "
                               "include directives dropped).")
    ] = EXACT,
    as_json: JsonOpt = False,
    *,
    options: dict[str, Any],
    fusion: dict[str, Any],
) -> None:
    """Rank passages for a question (or for every line of --file, encoded in batches)."""
    from searchapp.encode.cached_file import announcing
    from searchapp.index import Index
    from searchapp.store.locate import display

    with errors():
        queries = _queries(" ".join(text) if text else None, file)
        filters = _filters(filter_ or [], path_prefix, path_glob, collection)
        # A first query on this machine prepares the model (half a minute, once): said, not a silent wait.
        with Index(index) as ix, announcing(lambda what: say(what, err=True)):
            results = ix.search_batch(queries, filters=filters, **options, **fusion)
            if not any(results) and ix.is_empty():
                raise SearchappError(
                    f"the index at {display(index)} is empty: add files with `searchapp ingest FOLDER`"
                )
    for q, hits in zip(queries, results, strict=True):
        render_hits(q, options["mode"], hits, as_json, header=file is not None, text=text_form)
    if not any(results):  # as grep: no query (of --file's either) found anything
        raise typer.Exit(EXIT_NO_MATCH)


def _filters(pairs: list[str], path_prefix: str | None, path_glob: str | None,
             collection: str | None = None) -> Filter | None:
    if path_prefix is not None and os.path.lexists(path_prefix):
        # An existing path given on the command line means that file or folder, as an ingest keys its files: a
        # folder by its real path (a walk lists real folders), a file with its folders' links resolved.
        given = os.path.abspath(path_prefix)
        path_prefix = own_path(given) if not os.path.isdir(given) else os.path.realpath(given)
    flt = Filter(parse_choices(pairs, "--filter"), path_prefix=path_prefix, path_glob=path_glob,
                 collection=collection)
    return None if flt.empty else flt


def _queries(text: str | None, file: Path | None) -> list[str]:
    if (text is None) == (file is None):
        # A usage error, as a missing argument is (exit 2).
        raise typer.BadParameter("give a query TEXT or --file FILE, not both or neither")
    if file is None:
        return [text or ""]
    try:
        lines = [line.strip() for line in file.read_text(encoding="utf-8").splitlines()]
    except (OSError, UnicodeDecodeError) as exc:
        raise SearchappError(f"{file}: cannot read queries: {exc}") from exc
    queries = [line for line in lines if line]
    if not queries:
        raise SearchappError(f"{file}: no query in it (one a line)")
    return queries
