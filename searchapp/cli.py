"""Command line: each command parses, makes one library call, renders. Errors become one line and exit 1."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from searchapp.errors import SearchappError

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Semantic search over a folder of documents: ingest it, then query it.",
)

IndexOpt = Annotated[
    Path,
    typer.Option("--index", "-i", envvar="SEARCHAPP_INDEX", help="Index folder.", show_default=True),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout (see docs/cli.md).")]
DEFAULT_INDEX = Path(".searchapp")


@contextmanager
def _errors() -> Iterator[None]:
    """Expected failures end as one line on stderr and exit status 1, never a traceback."""
    try:
        yield
    except SearchappError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


def _emit_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, ensure_ascii=False, indent=2))


def _display_path(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return path


@app.command()
def ingest(
    path: Annotated[Path, typer.Argument(help="File or folder to index (recursively).")],
    index: IndexOpt = DEFAULT_INDEX,
    include: Annotated[list[str] | None, typer.Option(help="Glob of files to include (repeatable).")] = None,
    exclude: Annotated[list[str] | None, typer.Option(help="Glob of files to exclude (repeatable).")] = None,
    model: Annotated[str | None, typer.Option(help="Model name or local model folder (new index).")] = None,
    pooling: Annotated[
        str | None, typer.Option(help="Pooling strategy (new index): mean, cls, layers, sbert-wk.")
    ] = None,
    pooling_param: Annotated[
        list[str] | None,
        typer.Option(help="Pooling parameter KEY=VALUE, e.g. layer_start=4 or layers=-2,-1 (repeatable).")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option(help="Passage budget in word pieces, special tokens included (new index).")
    ] = None,
    overlap: Annotated[int | None, typer.Option(help="Word pieces repeated between passages (new index).")] = None,
    precision: Annotated[
        str | None, typer.Option(help="auto (bf16 where native and faster), fp32 or bf16 (default: the index's).")
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Passages per forward pass.")] = 32,
    threads: Annotated[int | None, typer.Option(help="CPU threads for the model (default: all cores).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add new files, replace changed ones and remove deleted ones; prints a summary."""
    from searchapp.config import parse_params
    from searchapp.index import Index

    with _errors():
        if not path.exists():  # before creating an index for nothing
            raise SearchappError(f"{path}: no such file or folder")
        params = parse_params(pooling_param) if pooling_param else None
        ix = Index.open_or_create(
            index, model=model, pooling=pooling, pooling_params=params, max_tokens=max_tokens, overlap=overlap,
            precision=precision, batch_size=batch_size, threads=threads,
        )
        with ix, _progress(quiet=False) as progress:
            summary = ix.ingest(path, include=include or (), exclude=exclude or (), progress=progress)
    for failed_path, reason in summary.failures:
        typer.echo(f"warning: {_display_path(failed_path)}: {reason}", err=True)
    if as_json:
        _emit_json(summary.to_dict())
    else:
        typer.echo(
            f"added {summary.added}, updated {summary.updated}, unchanged {summary.unchanged}, "
            f"removed {summary.removed}, failed {summary.failed}; "
            f"{summary.passages_embedded} passages embedded in {summary.seconds:.1f}s"
        )
    seen = summary.added + summary.updated + summary.unchanged + summary.failed
    if summary.failed and summary.failed == seen:
        typer.echo("error: no file could be ingested", err=True)
        raise typer.Exit(1)


@contextmanager
def _progress(quiet: bool) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr, created on the first callback (when the number of files is known)."""
    import click

    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if quiet:
            return
        if "bar" not in state:
            state["bar"] = click.progressbar(length=total, label="ingesting", file=sys.stderr)
            state["bar"].__enter__()
        state["bar"].update(done - state["bar"].pos)

    try:
        yield update
    finally:
        if "bar" in state:
            state["bar"].__exit__(None, None, None)


@app.command()
def query(
    text: Annotated[str | None, typer.Argument(help="The question or keywords.")] = None,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Run every line of this file as a query (batched).")
    ] = None,
    index: IndexOpt = DEFAULT_INDEX,
    k: Annotated[int, typer.Option("--k", "-k", help="Number of hits.")] = 10,
    mode: Annotated[str, typer.Option(help="hybrid, dense or lexical.")] = "hybrid",
    fusion: Annotated[str | None, typer.Option(help="Hybrid fusion: adaptive, convex, rrf (index default).")] = None,
    norm: Annotated[
        str | None, typer.Option(help="Score normalisation: theoretical, minmax, zscore (index default).")
    ] = None,
    alpha: Annotated[float | None, typer.Option(help="Hybrid weight of the dense side (index default).")] = None,
    rrf_k: Annotated[int | None, typer.Option(help="RRF constant (index default, 60).")] = None,
    k0: Annotated[int | None, typer.Option(help="Hybrid candidates taken from each side (index default).")] = None,
    filter_: Annotated[
        list[str] | None,
        typer.Option("--filter", help="Metadata KEY=VALUE the documents must have (repeatable; a repeated KEY "
                     "means any of its values; VALUE is read as JSON when it parses, else as a string)."),
    ] = None,
    path_prefix: Annotated[
        str | None, typer.Option(help="Only documents under this path (a folder or file; or a text id prefix).")
    ] = None,
    path_glob: Annotated[str | None, typer.Option(help="Only documents whose full path matches this glob.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Rank passages for a question (or for every line of --file, encoded in batches)."""
    from searchapp.index import Index

    with _errors():
        queries = _queries(text, file)
        filters = _filters(filter_ or [], path_prefix, path_glob)
        with Index(index) as ix:
            results = ix.search_batch(
                queries, k=k, mode=mode, filters=filters, method=fusion, norm=norm, alpha=alpha, rrf_k=rrf_k,
                k0=k0,
            )
            # Counting passages costs a table scan on a large index: only do it to explain an empty result.
            if not any(results) and ix.meta.counts()[1] == 0:
                raise SearchappError(f"the index at {index} is empty: add files with `searchapp ingest FOLDER`")
    for q, hits in zip(queries, results, strict=True):
        _render(q, mode, hits, as_json, header=file is not None)


def _filters(pairs: list[str], path_prefix: str | None, path_glob: str | None) -> dict[str, Any] | None:
    metadata: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise SearchappError(f"--filter {pair!r}: use KEY=VALUE")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        if key in metadata:
            previous = metadata[key] if isinstance(metadata[key], list) else [metadata[key]]
            value = previous + (value if isinstance(value, list) else [value])
        metadata[key] = value
    if path_prefix is not None and os.path.exists(path_prefix):
        # Files are stored by absolute path; an existing path given on the command line means that file or folder.
        path_prefix = os.path.abspath(path_prefix)
    if not metadata and path_prefix is None and path_glob is None:
        return None
    return {"metadata": metadata, "path_prefix": path_prefix, "path_glob": path_glob}


def _queries(text: str | None, file: Path | None) -> list[str]:
    if (text is None) == (file is None):
        raise SearchappError("give a query TEXT or --file FILE, not both or neither")
    if file is None:
        return [text or ""]
    try:
        lines = [line.strip() for line in file.read_text(encoding="utf-8").splitlines()]
    except (OSError, UnicodeDecodeError) as exc:
        raise SearchappError(f"{file}: cannot read queries: {exc}") from exc
    return [line for line in lines if line]


def _render(query: str, mode: str, hits: list[Any], as_json: bool, header: bool) -> None:
    """One query's hits: a JSON document (one line each with --file), or a readable table."""
    if as_json:
        doc = {"query": query, "mode": mode, "hits": [h.to_dict() for h in hits]}
        typer.echo(json.dumps(doc, ensure_ascii=False) if header else json.dumps(doc, ensure_ascii=False, indent=2))
        return
    if header:
        typer.echo(f"# {query}")
    if not hits:
        typer.echo("no results")
        return
    for h in hits:
        snippet = " ".join(h.text.split())
        snippet = snippet[:157] + "..." if len(snippet) > 160 else snippet
        typer.echo(f"{h.rank:>3}  {h.score:.3f}  {_display_path(h.path)}")
        typer.echo(f"     {snippet}")


@app.command()
def status(index: IndexOpt = DEFAULT_INDEX, as_json: JsonOpt = False) -> None:
    """Documents, passages, encoder and size of an index."""
    from searchapp.index import Index

    with _errors(), Index(index) as ix:
        stats = ix.stats()
    if as_json:
        _emit_json(stats.to_dict())
        return
    for key, value in stats.to_dict().items():
        typer.echo(f"{key:>15}: {value}")


def main() -> None:  # pragma: no cover - entry point for `python -m searchapp`
    app()


# Registers eval, eval-sts, tune and serve on `app` (kept in their own modules so this one stays small).
from searchapp import cli_eval, cli_serve  # noqa: E402,F401
