"""``watch``: folders kept in step with the index as their files change (``serve --watch`` runs the same beside
the server)."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from searchapp.cli import options
from searchapp.cli.common import display_path, errors, say
from searchapp.cli.ingest_command import embedding_progress, open_for_ingest, summary_line, warn_failures
from searchapp.collection import check_collection
from searchapp.errors import ConfigError
from searchapp.extras import missing
from searchapp.setting import DEFAULT_FILE_MB

if TYPE_CHECKING:
    from searchapp.index import Index
    from searchapp.ingest.summary import IngestSummary
    from searchapp.ingest.watch import Session, Watcher

DebounceOpt = Annotated[
    float,
    typer.Option(min=0, max=3600, metavar="SECONDS",
                 help="Write a burst of changes once none came for this long and every changed file is this old."),
]
PollOpt = Annotated[
    float | None,
    typer.Option(min=0.05, max=3600, metavar="SECONDS",
                 help="Scan the folders this often instead of following events (network mounts)."),
]


def register(app: typer.Typer) -> None:
    """Add ``watch`` to ``app``."""
    app.command()(watch)


def real_folders(folders: Sequence[Path], index: str) -> list[Path]:
    """The real paths of ``folders``; ``SearchappError`` for one that is missing or not a folder, or that is the
    index folder ``index`` itself (before the index is opened: nothing is created for a refused watch)."""
    from searchapp.ingest.options import check_root
    from searchapp.ingest.watch import check_index_place
    from searchapp.store.locate import is_postgres

    for folder in folders:
        check_root(folder)
        if not folder.is_dir():
            raise ConfigError(f"{folder}: not a folder (watch follows folders; to index one file: searchapp ingest)")
    if folders and not is_postgres(index):
        check_index_place(folders, index)
    return [Path(os.path.realpath(f)) for f in folders]


def watcher(
    ix: Index, folders: Sequence[Path], stop: threading.Event, *, include: Sequence[str] = (),
    exclude: Sequence[str] = (), max_file_mb: float = float(DEFAULT_FILE_MB), follow_links: bool = False,
    ignore_rules: bool = True,
    debounce: float = 0.5, poll: float | None = None, as_json: bool = False, collection: str | None = None,
    description: str | None = None,
) -> Watcher:
    """A watcher of ``folders`` that writes to ``ix`` with the ingest's options and reports each write session
    on stderr (its files' warnings, progress and a summary line; with ``as_json``, the summary as one JSON line
    on stdout); with ``collection``, every file it writes is put in that named collection (ingest --collection)."""
    try:
        import watchfiles  # noqa: F401  (imported by the watcher's thread; missing, it is one line here)
    except ImportError as exc:  # pragma: no cover - without the extra
        raise missing("watch", "watching", exc) from exc
    from searchapp.ingest.watch import Watcher, WatchSettings

    settings = WatchSettings(debounce=debounce, poll=poll)

    def sync(folder: Path, within: Collection[str] | None) -> IngestSummary:
        with embedding_progress() as progress:
            return ix.ingest(folder, include=include, exclude=exclude, progress=progress, max_file_mb=max_file_mb,
                             follow_links=follow_links, ignore_rules=ignore_rules, within=within,
                             collection=collection, description=description)

    def report(session: Session) -> None:
        shown = display_path(str(session.folder))
        if session.error is not None:
            say(f"warning: {shown}: {session.error}; trying again in {settings.retry:g}s", err=True)
            return
        if session.note is not None:
            say(f"warning: {shown}: {session.note}", err=True)
            return
        summary = session.summary
        if summary is None:  # pragma: no cover - a session has a summary, an error or a note
            return
        counts = (summary.added, summary.updated, summary.unchanged, summary.removed, summary.failed)
        if session.changed is not None and not any(counts):
            return  # changes to nothing indexed (a file of an unsupported type, an excluded one)
        warn_failures(summary)
        changes = "whole folder" if session.changed is None else f"{session.changed} changed"
        say(f"{shown} ({changes}): {summary_line(summary)}", err=True)
        if as_json:
            line = {"folder": str(session.folder), "changed": session.changed, **summary.to_dict()}
            typer.echo(json.dumps(line, ensure_ascii=False))

    ignore = [ix.path] if ix.path is not None else []
    return Watcher(folders, sync, report, settings, stop, ignore=ignore, follow_links=follow_links,
                   ignore_rules=ignore_rules)


@contextmanager
def stopped_by_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop`` (the watch ends once the write session in progress has committed) instead
    of interrupting whatever runs."""

    def handler(signum: int, frame: object) -> None:
        # Nothing printed here: the signal may have come in the middle of a print to the same stream.
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def watch(
    folders: Annotated[
        list[Path], typer.Argument(metavar="FOLDER", help="Folders to index, then follow as their files change.")
    ],
    index: options.IndexOpt = options.DEFAULT_INDEX,
    include: options.IncludeOpt = None,
    exclude: options.ExcludeOpt = None,
    model: options.ModelOpt = None,
    pooling: options.PoolingOpt = None,
    pooling_param: options.PoolingParamOpt = None,
    max_tokens: options.MaxTokensOpt = None,
    overlap: options.OverlapOpt = None,
    precision: options.PrecisionOpt = None,
    batch_size: options.BatchSizeOpt = 32,
    max_file_mb: options.MaxFileMbOpt = float(DEFAULT_FILE_MB),
    follow_links: options.FollowLinksOpt = False,
    no_ignore: options.NoIgnoreOpt = False,
    threads: options.ThreadsOpt = None,
    debounce: DebounceOpt = 0.5,
    poll: PollOpt = None,
    wait: options.WaitOpt = 0.0,
    collection: Annotated[
        str | None, typer.Option(help="Put the folders' documents in this named collection, as ingest --collection.")
    ] = None,
    description: Annotated[
        str | None, typer.Option(help="What the collection holds (with --collection), as ingest --description.")
    ] = None,
    as_json: options.JsonOpt = False,
) -> None:
    """Ingest folders, then keep the index in step as files are created, changed, renamed or deleted, until
    Ctrl-C or SIGTERM (which end the watch once the write session in progress is committed).

    Each burst of changes is one write session per folder, under the writer lock for that session only.
    Other writers take turns; with --wait a session waits that long for the lock, else it is tried again later.
    """
    with errors():
        roots = real_folders(folders, index)
        check_collection(collection, description)  # before an index is made, as ingest checks them
        ix = open_for_ingest(index, model, pooling, pooling_param, max_tokens, overlap, precision, batch_size,
                             threads, wait)
        stop = threading.Event()
        with ix, stopped_by_signals(stop):
            follower = watcher(ix, roots, stop, include=include or (), exclude=exclude or (),
                               max_file_mb=max_file_mb, follow_links=follow_links, ignore_rules=not no_ignore,
                               debounce=debounce, poll=poll, as_json=as_json, collection=collection,
                               description=description)
            say(f"watching {', '.join(display_path(str(r)) for r in roots)} (Ctrl-C to stop)", err=True)
            follower.run()  # a watch that cannot go on ends as one error line (errors())
    say("stopped", err=True)
