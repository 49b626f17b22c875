"""The first documents read are embedded on a second thread while the rest of the files are read (ingest/pipeline.py,
``_Prefetch``): the model loads and the encoder works during the reading. One thread uses the encoder at a time,
the vectors are those the main thread would have made, and a failure on the worker is the ingest's failure."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import searchapp.ingest.pipeline as pipeline
from searchapp import Index, IndexConfig
from searchapp.encode.encoder import LazyEncoder
from searchapp.errors import ModelLoadError
from tests.fakes import FakeEncoder


def write_docs(root: Path, n: int = 12) -> None:
    root.mkdir()
    for i in range(n):
        (root / f"doc{i:02d}.md").write_text(
            f"# Page {i}\n\n" + "\n\n".join(f"Paragraph {j} of page {i} about topic {i * j}. " * 12 for j in range(6)))


class Watched(FakeEncoder):
    """The fake encoder, noting where the reading was at each call and any call made while another ran."""

    reads = 0  # files read so far in this test (the ``watched`` fixture counts them)

    def __init__(self) -> None:
        super().__init__()
        self.busy = threading.Lock()
        self.overlapped = False
        self.reads_before: list[int] = []  # files read when each call started

    def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray:
        if not self.busy.acquire(blocking=False):
            self.overlapped = True
            self.busy.acquire()
        try:
            self.reads_before.append(Watched.reads)
            return super().encode(texts, truncate)
        finally:
            self.busy.release()


@pytest.fixture()
def watched(monkeypatch: pytest.MonkeyPatch) -> Watched:
    encoder = Watched()
    prepare = pipeline.prepare
    monkeypatch.setattr(Watched, "reads", 0)

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = prepare(*args, **kwargs)
        Watched.reads += 1
        return out

    monkeypatch.setattr(pipeline, "prepare", counted)
    return encoder


@pytest.mark.parametrize("read_ahead", [pipeline.READ_AHEAD_CHARS, 20_000])
def test_embedding_starts_while_files_are_still_read(  # type: ignore[no-untyped-def]
        tmp_path: Path, watched: Watched, monkeypatch, read_ahead: int) -> None:
    # A small read-ahead: files beyond it are read again and embedded by the main thread, after the prefix the
    # worker took.
    monkeypatch.setattr(pipeline, "READ_AHEAD_CHARS", read_ahead)
    monkeypatch.setattr(pipeline, "FLUSH_PASSAGES", 8)
    write_docs(tmp_path / "docs")
    config = IndexConfig.from_flat(max_tokens=64)
    with Index(tmp_path / "ix", create=True, config=config, encoder=watched) as ix:
        summary = ix.ingest(tmp_path / "docs")
        assert summary.added == 12 and watched.embedded == summary.passages_embedded
        got = ranked(ix)
    assert watched.reads_before[0] < 12  # the first call began before the last file was read
    assert not watched.overlapped
    # The same vectors as an ingest that embeds everything on the main thread after the reading.
    monkeypatch.setattr(pipeline, "PREFETCH_FLUSHES", 0)
    plain = Watched()
    Watched.reads = 0
    with Index(tmp_path / "plain", create=True, config=config, encoder=plain) as ix:
        ix.ingest(tmp_path / "docs")
        assert plain.reads_before[0] >= 12  # without it, every file is read before the first embed
        assert ranked(ix) == got


def ranked(ix: Index) -> list[tuple[str, int, float]]:
    """Every passage's place and dense score for a few questions."""
    return [(hit.path, hit.start, round(hit.score, 5)) for q in ("topic 20 of page 4", "paragraph 3", "page 11")
            for hit in ix.search(q, k=200, mode="dense")]


def test_a_model_that_fails_to_load_on_the_worker_fails_the_ingest(tmp_path: Path) -> None:
    def make() -> FakeEncoder:
        raise ModelLoadError("model.onnx: cannot load the model")

    write_docs(tmp_path / "docs")
    Index(tmp_path / "ix", create=True, config=IndexConfig.from_flat(max_tokens=64), encoder=FakeEncoder()).close()
    with Index(tmp_path / "ix", encoder=LazyEncoder(make)) as ix:
        with pytest.raises(ModelLoadError, match="cannot load the model"):
            ix.ingest(tmp_path / "docs")
        assert ix.stats().documents == 0  # nothing committed without its vectors


def test_a_run_that_fails_while_reading_stops_the_worker_after_its_group(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Ctrl-C or an error while the files are read: the run must not wait for the worker's whole job (up to 16
    # flushes of passages), only for the group it is embedding.
    import time

    monkeypatch.setattr(pipeline, "PROGRESS_GROUP", 4)
    monkeypatch.setattr(pipeline, "PREFETCH_MINIMUM", 4)
    embedding, failed = threading.Event(), threading.Event()
    started_after: list[int] = []

    class Slow(FakeEncoder):
        def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray:
            if failed.is_set():
                started_after.append(len(texts))
            embedding.set()
            time.sleep(0.05)
            return super().encode(texts, truncate)

    prepare = pipeline.prepare

    def failing(task, *args, **kwargs):  # type: ignore[no-untyped-def]
        if task.path.endswith("doc05.md"):
            assert embedding.wait(10)  # the worker's first job is under way
            failed.set()
            raise KeyboardInterrupt
        return prepare(task, *args, **kwargs)

    monkeypatch.setattr(pipeline, "prepare", failing)
    write_docs(tmp_path / "docs")
    with Index(tmp_path / "ix", create=True, config=IndexConfig.from_flat(max_tokens=64), encoder=Slow()) as ix:
        with pytest.raises(KeyboardInterrupt):
            ix.ingest(tmp_path / "docs")
        assert ix.stats().documents == 0
    assert started_after == []  # no group begun once the run was ending
