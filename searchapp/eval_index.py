"""The index an evaluation scores: a benchmark split's, or a folder of documents' with its known-item questions,
opened (a cached one by default) or built, and every question's runs gathered against it. The step of ``searchapp
eval`` and ``tune`` that needs an :class:`Index` (above it); the scoring itself (``evaluate/``, below it) works on
what the index hands it. Questions are embedded by the index's query encoder, the one the server uses
(``Index.query_encoder``, encode/spec.py), so an evaluation measures the served path."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from searchapp.config import IndexConfig
from searchapp.encode.device import resolve_device
from searchapp.errors import SearchappError
from searchapp.evaluate.beir import load_beir
from searchapp.evaluate.diagnostics import Diagnosis, diagnose
from searchapp.evaluate.known_items import KnownItems, read_questions
from searchapp.evaluate.runner import Prepared, collect, index_path
from searchapp.index import Index
from searchapp.ingest.files import is_under
from searchapp.ingest.options import IngestOptions
from searchapp.ingest.pipeline import IngestSummary, Progress
from searchapp.query.fusion import Fusion
from searchapp.store.locate import display


def _open(path: str | Path, config: IndexConfig, cached: bool, folder: bool = False, device: str = "auto") -> Index:
    # A folder's cache index is keyed by what its passages are embedded with (runner.index_path), the passage
    # context among it; a benchmark's records carry no headings, so their context cannot change a vector.
    context = config.passage_context if cached and folder else None
    index = Index.open_or_create(
        path, model=config.model, pooling=config.pooling, pooling_params=config.pooling_params,
        max_tokens=config.splitter.max_tokens, overlap=config.splitter.overlap, precision=config.precision,
        passage_context=context, device=device,
    )
    if cached:
        # A cache index always evaluates this version's hybrid defaults; an index named with --index keeps its
        # own (for example a tuned one).
        try:
            index.set_fusion(Fusion())
        except BaseException:
            index.close()
            raise
    return index


def prepare(
    folder: Path,
    split: str,
    config: IndexConfig,
    k0: int | None = None,
    index_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    device: str = "auto",
) -> Prepared:
    """Load the split, build or reuse the corpus index (embedding on ``device``: encode/device.py), and gather every
    judged query's runs."""
    data = load_beir(folder, split)
    path = index_dir or index_path(folder, config, device=resolve_device(device))
    with _open(path, config, cached=index_dir is None, device=device) as index:
        if index.stats().documents != len(data.corpus):
            if progress:
                progress(f"indexing {len(data.corpus)} documents of {folder.name} into {path}")
            index.ingest_records((d, t, data.document_text(d)) for d, (t, _) in data.corpus.items())
        prepared = collect(data, index.stores, index.query_encoder, index.config.fusion,
                           k0 or index.config.fusion.k0)
    return replace(prepared, texts=StoredTexts(str(path)))


class StoredTexts:
    """Passages' texts as the index at ``location`` stores them, read when a rerank stage asks (the index opened
    read-only for each read of passages not read before): an evaluation's runs are gathered once, its rankings
    made after the index is closed."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.read: dict[int, str] = {}

    def __call__(self, pids: Sequence[int]) -> dict[int, str]:
        missing = [pid for pid in pids if pid not in self.read]
        if missing:
            with Index(self.location, read_only=True) as index, index.stores.reader() as reader:
                self.read.update({pid: rec.text for pid, rec in reader.hydrate(missing).items()})
        return {pid: self.read[pid] for pid in pids if pid in self.read}


@dataclass(frozen=True)
class FolderCheck:
    """A folder's questions with their runs (documents by their path relative to the folder), the index they
    ran against (as shown to people, and its location) and what bringing it up to date did."""

    prepared: Prepared
    items: KnownItems
    index: str
    summary: IngestSummary
    location: str = field(repr=False)  # as opened (a URL with its password: kept out of a repr)


def prepare_folder(
    folder: Path,
    questions: Path,
    config: IndexConfig,
    k0: int | None = None,
    index_dir: str | None = None,
    progress: Callable[[str], None] | None = None,
    embedding: Progress | None = None,
    device: str = "auto",
) -> FolderCheck:
    """Read the questions about ``folder``, bring its index up to date (an incremental ingest: only what changed
    since the last run is read and embedded) and gather every question's runs.

    ``index_dir``: the index to use or create (any index; the folder is ingested into it), else a cached one
    keyed by the folder's path and the encoder/splitter settings. ``progress`` gets lines for a person,
    ``embedding`` the ingest's passage counts."""
    options = IngestOptions(folder)  # the folder checked, once, before any indexing work
    if not folder.is_dir():
        raise SearchappError(f"{folder}: not a folder (give the folder the questions' paths are relative to)")
    items = read_questions(questions, folder)  # before any indexing work
    # The spelling `searchapp ingest` stores keys in: the real path (a folder reached through a link, or under a
    # linked parent such as macOS's /tmp, is keyed by where it really is).
    root = os.path.realpath(folder)
    path = index_dir or index_path(folder, config, kind="folder", device=resolve_device(device))
    with _open(path, config, cached=index_dir is None, folder=True, device=device) as index:
        summary = index.ingest(options, progress=embedding)
        changed = summary.added + summary.updated + summary.removed
        if progress and changed:
            progress(f"indexed {folder} into {display(str(path))}: added {summary.added}, updated "
                     f"{summary.updated}, removed {summary.removed} ({summary.unchanged} unchanged)")
        prepared = collect(items, index.stores, index.query_encoder, index.config.fusion,
                           k0 or index.config.fusion.k0)
    relative = {pid: _relative(key, root) for pid, key in prepared.doc_of.items()}
    _check_indexed(items, questions, set(relative.values()), summary, root)
    return FolderCheck(replace(prepared, doc_of=relative, texts=StoredTexts(str(path))), items, display(str(path)),
                       summary, str(path))


def diagnose_folder(check: FolderCheck, fusion: Fusion) -> list[Diagnosis]:
    """Every question of ``check`` diagnosed (evaluate/diagnostics.py) with hybrid fused by ``fusion``: its index
    opened again, read-only, for the passages' texts and the terms' IDF."""
    with Index(check.location, read_only=True) as index, index.stores.reader() as reader:
        return diagnose(check.prepared, check.items, fusion, reader)


def _relative(key: str, root: str) -> str:
    """A document's key as a questions file names it: its path relative to ``root``, ``/``-separated (a key from
    elsewhere in a shared index as it is)."""
    if not os.path.isabs(key):
        return Path(key).as_posix()
    return Path(os.path.relpath(key, root)).as_posix() if is_under(key, root) else key


def _check_indexed(items: KnownItems, questions: Path, indexed: set[str], summary: IngestSummary, root: str) -> None:
    """A target that the ingest left out (failed, hidden, excluded, unsupported) could never be found: an error,
    not a silent miss."""
    failed = {_relative(key, root): reason for key, reason in summary.failures}
    for q in items.questions:
        for target in q.targets:
            if target not in indexed:
                why = failed.get(target, "hidden, excluded or of a type that is not indexed")
                raise SearchappError(f"{questions}:{q.line}: target {target!r} is not indexed ({why})")
