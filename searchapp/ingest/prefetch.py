"""Embedding the first documents an ingest reads on a second thread while it reads the rest, so that the model
loads and the encoder works during the reading (``pipeline.Ingest``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor

import numpy as np

from searchapp.ingest.reading import ReadFile
from searchapp.types import EncoderLike


class Prefetch:
    """Embeds documents on one worker thread while the main thread reads the rest: each job takes every passage
    waiting once the worker is free, in the order read, and the documents embedded are a prefix of those offered
    (the first one refused closes it). Only one thread uses the encoder at a time: the main thread embeds nothing
    before :meth:`wait` (``Ingest._flush``)."""

    def __init__(self, encoder: EncoderLike, inputs: Callable[[ReadFile], list[str]], most: int, minimum: int,
                 group: int, on_group: Callable[[int], None] | None = None) -> None:
        # At most ``most`` passages in all; a job once ``minimum`` wait; embedded ``group`` at a time, the worker
        # stopping between two groups once the run is ending.
        self.encoder, self.most, self.minimum, self.group = encoder, most, minimum, group
        self.inputs = inputs  # what the encoder is handed for a document's passages (made when its job is)
        self.on_group = on_group  # told how many passages each group embedded, on the worker's thread
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-embed")
        self.open = True
        self.waiting: list[tuple[int, ReadFile]] = []  # (task index, the document read)
        self.waiting_passages = 0
        self.taken = 0  # passages offered and taken, waiting or in a job
        self.jobs: list[Future[np.ndarray]] = []
        self.where: dict[int, tuple[int, int, int]] = {}  # task index -> (job, first row, end row)
        self.stopping = threading.Event()

    def offer(self, index: int, result: ReadFile, passages: int | None = None) -> None:
        """Take task ``index``'s document for a job, or close: over the limit, or closed before. ``passages``:
        how many of its passages it embeds (those ``inputs`` gives: all of them by default)."""
        n = len(result.spans) if passages is None else passages
        if not self.open or self.taken + n > self.most:
            self.open = False
            return
        self.waiting.append((index, result))
        self.waiting_passages += n
        self.taken += n
        if self.waiting_passages >= self.minimum and not self.busy:
            self._submit()

    def close(self) -> None:
        """No more jobs: what is still waiting is embedded by the main thread, as if never offered."""
        self.open = False
        self.waiting, self.waiting_passages = [], 0

    @property
    def busy(self) -> bool:
        # A job is submitted only when the one before is done: the last is the only one that can be running.
        return bool(self.jobs) and not self.jobs[-1].done()

    @property
    def loading(self) -> bool:
        """Whether a job is waiting for the model to load."""
        return self.busy and not getattr(self.encoder, "is_loaded", True)

    def vectors(self, index: int) -> np.ndarray | None:
        """Task ``index``'s float32 ``(passages, d)`` vectors, once its job is done; ``None`` if it was in none. A
        job's failure is raised here, as the main thread's encode would have raised it."""
        where = self.where.get(index)
        if where is None:
            return None
        job, start, end = where
        return self.jobs[job].result()[start:end]

    def wait(self) -> None:
        """Until the worker's jobs are done (a failure is raised by :meth:`vectors`, for its documents)."""
        if self.jobs:
            self.jobs[-1].exception()

    def shutdown(self) -> None:
        """End the worker: a job still running (the run is ending early) stops after its current group."""
        self.stopping.set()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def _embed(self, texts: list[str]) -> np.ndarray:
        parts = []
        for at in range(0, len(texts), self.group):
            if self.stopping.is_set():
                raise CancelledError("the ingest ended before this job")
            parts.append(self.encoder.encode(texts[at : at + self.group]))
            if self.on_group is not None:
                self.on_group(len(parts[-1]))
        return np.concatenate(parts)

    def _submit(self) -> None:
        texts: list[str] = []
        for index, result in self.waiting:
            own = self.inputs(result)
            self.where[index] = (len(self.jobs), len(texts), len(texts) + len(own))
            texts.extend(own)
        self.waiting, self.waiting_passages = [], 0
        self.jobs.append(self.pool.submit(self._embed, texts))
