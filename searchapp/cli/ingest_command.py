"""``searchapp ingest``, and what the commands that ingest share: opening an index for it, the progress, the
summary line and the warnings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from searchapp.cli.common import EXIT_ERROR, command_seconds, display_path, emit_json, errors, say
from searchapp.cli.help import examples
from searchapp.cli.options import (
    DEFAULT_INDEX,
    READ_PANEL,
    RUN_PANEL,
    BatchSizeOpt,
    DeviceOpt,
    ExcludeOpt,
    FollowLinksOpt,
    IncludeOpt,
    IndexOpt,
    JsonOpt,
    MaxFileMbOpt,
    MaxTokensOpt,
    ModelOpt,
    NoIgnoreOpt,
    OverlapOpt,
    PoolingOpt,
    PoolingParamOpt,
    PrecisionOpt,
    ThreadsOpt,
    WaitOpt,
)
from searchapp.cli.progress import IngestProgress
from searchapp.setting import DEFAULT_FILE_MB, MAX_GPUS_PER_ACTOR, MAX_THREADS

if TYPE_CHECKING:
    from searchapp.index import Index
    from searchapp.ingest.summary import IngestSummary


def register(app: typer.Typer) -> None:
    """Add ``ingest`` to ``app``."""
    app.command(epilog=examples(
        "searchapp ingest ./docs",
        "searchapp ingest ./api --collection api --description 'The HTTP API reference'",
        "searchapp ingest ./docs --exclude 'changelog*' --json",
    ))(ingest)


def ingest(
    path: Annotated[Path, typer.Argument(help="File or folder to index (recursively).")],
    index: IndexOpt = DEFAULT_INDEX,
    include: IncludeOpt = None,
    exclude: ExcludeOpt = None,
    model: ModelOpt = None,
    pooling: PoolingOpt = None,
    pooling_param: PoolingParamOpt = None,
    max_tokens: MaxTokensOpt = None,
    overlap: OverlapOpt = None,
    precision: PrecisionOpt = None,
    batch_size: BatchSizeOpt = 32,
    max_file_mb: MaxFileMbOpt = float(DEFAULT_FILE_MB),
    follow_links: FollowLinksOpt = False,
    no_ignore: NoIgnoreOpt = False,
    workers: Annotated[
        str, typer.Option(help="local, or ray / ray:ADDRESS: load, split and embed on a Ray cluster (a local one, "
                          "or the one at ADDRESS; needs the ray extra; docs/distributed.md).",
                          rich_help_panel=RUN_PANEL)
    ] = "local",
    actors: Annotated[int, typer.Option(
        min=1, max=MAX_THREADS, help="Encoder actors, with --workers ray.", rich_help_panel=RUN_PANEL)] = 1,
    gpus_per_actor: Annotated[float, typer.Option(
        min=0, max=MAX_GPUS_PER_ACTOR, rich_help_panel=RUN_PANEL,
        help="GPUs each encoder actor reserves through Ray and embeds on, with --workers ray (0: CPUs).")
    ] = 0,
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    force: Annotated[
        bool, typer.Option("--force", help="Read every file again, even if its size and mtime are unchanged.",
                                   rich_help_panel=READ_PANEL)
    ] = False,
    wait: WaitOpt = 0.0,
    collection: Annotated[
        str | None, typer.Option(help="Put the documents of PATH in this named collection (query --collection "
                                 "finds them; a document is in one collection).", rich_help_panel=READ_PANEL)
    ] = None,
    description: Annotated[
        str | None, typer.Option(help="What the collection holds and when to search it (with --collection; "
                                 "`searchapp collections` and the MCP tool list_collections show it).",
                                 rich_help_panel=READ_PANEL)
    ] = None,
    list_skipped: Annotated[bool, typer.Option(
        "--list-skipped", help="After the summary, list the files and folders left out, with why (the first "
        "1,000; --json always has them).", rich_help_panel=READ_PANEL)] = False,
    as_json: JsonOpt = False,
) -> None:
    """Add new files, replace changed ones and remove deleted ones; prints a summary."""
    from searchapp.encode.cached_file import announcing
    from searchapp.ingest.options import IngestOptions

    with errors():
        # Checked before an index is created for nothing: the path, and the workers (a bad value, or nothing at an
        # address).
        options = IngestOptions(path, include=include or (), exclude=exclude or (), max_file_mb=max_file_mb,
                                follow_links=follow_links, ignore_rules=not no_ignore, force=force,
                                workers=workers, actors=actors, gpus_per_actor=gpus_per_actor,
                                collection=collection, description=description)
        if options.ray is not None:
            from searchapp.ingest.distributed import connect

            # The cluster reached and its CPUs and GPUs checked before the index is opened, which may create it
            # with settings a re-run would have to match; the ingest then uses this connection.
            connect(options.ray)
        # The progress from the first second: a new index checks its settings against the model, which a first
        # run on this machine prepares (exported, quantised) before anything else.
        with embedding_progress() as progress, announcing(progress.stage):
            ix = open_for_ingest(index, model, pooling, pooling_param, max_tokens, overlap, precision, batch_size,
                                 threads, wait, device)
            with ix:
                summary = ix.ingest(options, progress=progress)
        summary.seconds = command_seconds()  # the command's, model preparation and all, not the pipeline's
    warn_failures(summary)
    if as_json:
        emit_json(summary.to_dict())
    else:
        say(summary_line(summary))
        if list_skipped:
            for path, reason in summary.skipped_files:
                folder = os.sep if path.endswith(os.sep) else ""  # display_path drops it
                say(f"skipped {display_path(path)}{folder}: {_SKIP_WORDS[reason]}")
            if summary.skipped_files_omitted:
                say(f"skipped {summary.skipped_files_omitted:,} more")
    # Some files failed: a success, each failure a warning (the rest is indexed). Every file failed: an error.
    seen = summary.added + summary.updated + summary.unchanged + summary.failed
    if summary.failed and summary.failed == seen:
        say("error: no file could be ingested", err=True)
        raise typer.Exit(EXIT_ERROR)


def open_for_ingest(
    index: str, model: str | None, pooling: str | None, pooling_param: list[str] | None, max_tokens: int | None,
    overlap: int | None, precision: str | None, batch_size: int, threads: int | None, wait: float,
    device: str = "auto",
) -> Index:
    """The index an ingest (or a watch) writes to, opened or created with the encoder and splitter options, embedding
    on ``device``."""
    from searchapp.index import Index
    from searchapp.keyvalue import parse_params

    params = parse_params(pooling_param) if pooling_param else None
    return Index.open_or_create(
        index, model=model, pooling=pooling, pooling_params=params, max_tokens=max_tokens, overlap=overlap,
        precision=precision, batch_size=batch_size, threads=threads, lock_wait=wait, device=device,
    )


def warn_failures(summary: IngestSummary) -> None:
    """A warning line on stderr for each file an ingest skipped with a reason, or read despite a problem."""
    for failed_path, reason in [*summary.failures, *summary.warnings]:
        say(f"warning: {display_path(failed_path)}: {reason}", err=True)


def summary_line(summary: IngestSummary) -> str:
    """An ingest's summary for a human, on one line."""
    skipped = ", ".join(f"{n} {_SKIP_WORDS[r]}" for r, n in summary.to_dict()["skipped"].items() if n)
    return (
        f"added {summary.added}, updated {summary.updated}, unchanged {summary.unchanged}, "
        f"removed {summary.removed}, failed {summary.failed}; "
        f"{summary.passages_embedded} passage{'' if summary.passages_embedded == 1 else 's'} embedded"
        + (f", {summary.passages_reused} reused" if summary.passages_reused else "")
        + f" in {summary.seconds:.1f}s"
        + (f"; skipped {skipped}" if skipped else "")
    )


# The summary's words for each reason a file was skipped (ingest.pipeline.SKIP_REASONS).
_SKIP_WORDS = {"hidden": "hidden", "ignored": "ignored", "unsupported": "of unsupported type",
               "excluded": "excluded", "empty": "empty", "too_large": "too large"}


def embedding_progress() -> IngestProgress:
    """The ingest's reporter on stderr (cli/progress.py): its stages, then passages embedded of the total with
    the rate and the time left; a line redrawn on a terminal, lines at least every few seconds in a log."""
    return IngestProgress()
