"""Reading one file for an ingest: what the walk found to read (a :class:`Task`), and the file loaded and split
(:func:`prepare`, a pure function any worker may run: :class:`ReadFile`, or the reason it failed)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from searchapp.errors import LoadError
from searchapp.ingest.formats.load import MAX_FILE_BYTES, load_document
from searchapp.ingest.formats.registry import format_for
from searchapp.ingest.splitter import OffsetsFn, SplitterConfig, split
from searchapp.types import Document, Span

# The version of what the steps every format shares make of a loaded text (markup blanking, headings and section
# paths, the splitter); each format's loader has its own (``Format.version``). Raise the one whose output changes
# for the same bytes: a re-ingest then reads the files it made again, though their size and mtime are unchanged,
# and re-embeds those whose passages come out different. Their history: docs/architecture.md, "Reader versions".
READERS_VERSION = 5
# A format's version counts in thousands above the shared one, so that both fit the stored integer and a format at
# version 0 records what every reader recorded before formats had versions.
FORMAT_STEP = 1000


def reader_version(path: str, source: str = "file") -> int:
    """The reader version recorded with the passages of the document at ``path`` (a text added by id has no
    format: the shared version alone)."""
    found = format_for(Path(path)) if source == "file" else None
    return READERS_VERSION + FORMAT_STEP * (found.version if found is not None else 0)


@dataclass(frozen=True)
class Task:
    """A file the walk found new or changed (by size or mtime): ``path`` as walked, ``key`` its absolute path
    (the stored key), and the stored version's id and sha256 if there is one."""

    path: str
    key: str
    stored_id: int | None = None
    stored_sha: str | None = None
    # The stored passages were made by another version of the readers (reader_version): same bytes are no
    # reason to keep them.
    stale: bool = False


@dataclass(frozen=True)
class ReadFile:
    """A task's file loaded and split: its document and passage spans; or ``failure`` (the reason it was
    skipped); or ``unchanged`` (same content under a new mtime: only the mtime is recorded); or ``same_content``
    (same content, read again by a newer reader: kept if its passages come out as they are stored)."""

    task: Task
    document: Document | None = None
    spans: tuple[Span, ...] = ()
    failure: str | None = None
    unchanged: bool = False
    same_content: bool = False
    # With a failure: the file was read and holds no text now, so its indexed version goes too.
    no_text: bool = False
    # With a failure: the reason it counts as skipped too (SKIP_REASONS), if any.
    skipped: str | None = None
    # Problems met reading a file that was read all the same (a malformed PDF repaired), one line each.
    notes: tuple[str, ...] = ()


def prepare(
    task: Task, splitter: SplitterConfig, offsets: OffsetsFn, max_bytes: int = MAX_FILE_BYTES
) -> ReadFile:
    """Load and split one file: the CPU stage, a pure function of the file and the settings (any worker may run
    it, and again). A failure of this one file, running out of memory included, is its result, never raised."""
    notes: list[str] = []
    try:
        doc = replace(load_document(Path(task.path), max_bytes, notes), path=task.key)
    except LoadError as exc:
        return ReadFile(task, failure=exc.reason, no_text=exc.no_text, skipped=exc.skipped)
    except OSError as exc:
        return ReadFile(task, failure=f"cannot read: {exc.strerror or exc}")
    except MemoryError:
        return ReadFile(task, failure="out of memory loading it")
    same = task.stored_sha is not None and task.stored_sha == doc.sha256
    if same and not task.stale:
        return ReadFile(task, document=doc, unchanged=True, notes=tuple(notes))
    found = format_for(Path(task.path))
    # Code splits at its definitions (Format.splits_at_headings): no passage runs from one into the next.
    breaks = [h.start for h in doc.headings] if found is not None and found.splits_at_headings else ()
    try:
        spans = tuple(split(doc.text, offsets, splitter, breaks))
    except MemoryError:
        return ReadFile(task, failure="out of memory splitting it")
    if not spans:
        return ReadFile(task, failure="no text", no_text=True, skipped="empty")
    return ReadFile(task, document=doc, spans=spans, notes=tuple(notes), same_content=same)


def embeds(result: ReadFile) -> bool:
    """Whether ``result``'s passages will be embedded (read whole, changed: not a failure, nor content the index
    holds already)."""
    return (result.failure is None and result.document is not None and bool(result.spans)
            and not result.unchanged and not result.same_content)
