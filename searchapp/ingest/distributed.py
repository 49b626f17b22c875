"""Distributed ingest on Ray Data: the load-and-split stage in CPU tasks, embedding in an actor pool of encoders.

The driver (the process that runs ``searchapp ingest --workers ray``) keeps what must happen once: it holds the
index's writer lock, walks the folder and detects changes (``Ingest._plan``), so only new and changed files go
out; it commits what comes back, whole documents in transactions, and removes the documents whose files are
gone. Workers run the same stage functions as an in-process ingest (``pipeline.prepare``, and the encoder the
driver's ``EncoderSpec`` builds, as an in-process ingest builds its own), so a Ray ingest stores the rows an
in-process one would. A task or actor that dies is retried by Ray; its work is a
pure function of the file and the settings, and nothing is written until the driver commits, so a retry
cannot write twice.

``Index`` starts a run's :class:`RayStages` (the cluster joined, the spec pinned) before it takes the writer lock
and hands them to ``pipeline.Ingest``, which calls them on its tasks.

Every node needs searchapp with the ``ray`` extra, the model package, and the folder at the same path (a shared
filesystem). Ray is imported only here, only when asked for.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from searchapp.encode.provenance import EmbeddedWith
from searchapp.encode.spec import EncoderSpec
from searchapp.encode.tokenizer import ModelOffsets
from searchapp.errors import ConfigError
from searchapp.extras import missing
from searchapp.ingest.options import PREPARE_CPUS, RayOptions, check_cpus
from searchapp.ingest.reading import ReadFile, Task, prepare
from searchapp.ingest.sections import document_sections, passage_inputs
from searchapp.ingest.splitter import SplitterConfig

# This package's folder: shipped to the workers, so they run the driver's code.
PACKAGE = Path(__file__).resolve().parents[1]
# Documents per load-and-split task, and per encoder call: an encoder call sorts its passages by length into
# forward batches, so it wants as many as an in-process ingest gives it (about 512 passages; with 32 documents
# a call the Ray ingest was well behind the in-process one: docs/distributed.md gives the figures).
PREPARE_BATCH = 32
ENCODE_BATCH = 256
# CPUs a load-and-split task reserves: light next to embedding, so they share the cores with the actors.


def _prepare_batch(
    batch: dict[str, np.ndarray], splitter: SplitterConfig, model: str, max_bytes: int
) -> dict[str, np.ndarray]:
    """CPU task: load and split each file of the batch (pickled ``Task`` -> pickled ``ReadFile``)."""
    offsets = ModelOffsets(model)
    out = [pickle.dumps(prepare(pickle.loads(t), splitter, offsets, max_bytes)) for t in batch["task"]]
    return {"prepared": np.array(out, dtype=object)}


class _EncodeActor:
    """An actor of the pool: loads the model once, then embeds the passages of each batch of documents."""

    def __init__(self, spec: EncoderSpec, context: str = "none", limit: int = 512) -> None:
        # Ray limits a 1-CPU actor to one OpenMP thread; the model should use its node's cores (or --threads).
        # Built by the driver's spec as an in-process ingest builds its encoder (encode/spec.py).
        self.encoder = replace(spec, threads=spec.threads or os.cpu_count() or 1).build("ingest")
        self.context, self.limit = context, limit

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        prepared: list[ReadFile] = [pickle.loads(p) for p in batch["prepared"]]
        todo = {i for i, p in enumerate(prepared) if p.failure is None and not p.unchanged and p.document}
        # What the encoder sees of each passage, as in an in-process ingest (ingest/sections.py).
        texts = [t for i, p in enumerate(prepared) if i in todo for t in passage_inputs(
            p.document.text, p.spans, document_sections(p.document, p.spans),  # type: ignore[union-attr]
            self.context, self.limit)]
        vectors = self.encoder.encode(texts) if texts else np.zeros((0, 0), dtype=np.float32)
        out: list[bytes] = []
        row = 0
        for i, p in enumerate(prepared):
            if i in todo:
                out.append(pickle.dumps(np.ascontiguousarray(vectors[row : row + len(p.spans)])))
                row += len(p.spans)
            else:
                out.append(b"")
        return {"prepared": batch["prepared"], "vectors": np.array(out, dtype=object)}


def connect(options: RayOptions) -> None:
    """Start or join the Ray cluster, and check it can run the pipeline: each encoder actor reserves
    ``actor_cpus`` (and ``actor_gpus``) and load-and-split tasks need ``PREPARE_CPUS`` more (with fewer, Ray would
    wait forever). ``ConfigError`` with the reason otherwise. A Ray already initialised in this process is used as
    it is."""
    try:
        import ray
        import ray.data  # noqa: F401 - the data extra's presence is checked here, before any work
    except ImportError as exc:
        raise missing("ray", "--workers ray", exc) from exc
    # Off unless the user says otherwise: no usage report leaves the machine from a cluster started here.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if not ray.is_initialized():
        where = f" at {options.address}" if options.address else ""
        # A cluster started here (no address, none in RAY_ADDRESS) is this machine's alone: its node is known by
        # the loopback address (Ray would otherwise find it by routing a socket towards a public DNS server).
        starts = not options.address and not os.environ.get("RAY_ADDRESS")
        local = {"_node_ip_address": "127.0.0.1"} if starts else {}
        try:
            with _no_api_server(ray, enabled=starts):
                ray.init(
                    address=options.address, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
                    # The workers import the driver's own searchapp, whatever is installed where they run.
                    runtime_env={"py_modules": [str(PACKAGE)]}, **local,
                )
        except Exception as exc:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ValueError...
            raise ConfigError(f"cannot start or reach a Ray cluster{where}: {exc}") from exc
    check_cpus(options, float(ray.cluster_resources().get("CPU", 0)))
    gpus = float(ray.cluster_resources().get("GPU", 0))
    need = options.actors * options.actor_gpus
    if gpus < need:
        raise ConfigError(
            f"--actors {options.actors} --gpus-per-actor {options.actor_gpus:g} needs {need:g} GPUs in the Ray "
            f"cluster; it has {gpus:g}" + ("" if gpus else " (no node offers a GPU: start its nodes where the GPUs "
                                           "are, or embed on CPUs without --gpus-per-actor)")
        )


@contextmanager
def _no_api_server(ray: Any, enabled: bool) -> Iterator[None]:
    """While a local cluster starts: no API server process. Ray starts one even with ``include_dashboard=False``
    (for its usage module alone), and that module asks the cloud metadata address (169.254.169.254) and the DNS
    resolver which cloud it runs in, usage reports off or not; nothing of an ingest needs it (Ray Data talks to
    the cluster's GCS). Ray has no setting for this, so its node's one method that starts it does nothing here;
    a Ray without that method is left as it is (the Ray test watches every connect() and would tell)."""
    node = getattr(getattr(getattr(ray, "_private", None), "node", None), "Node", None)
    original = getattr(node, "start_api_server", None)
    if not enabled or original is None:
        yield
        return
    node.start_api_server = lambda *_, **__: None  # type: ignore[union-attr]
    try:
        yield
    finally:
        node.start_api_server = original  # type: ignore[union-attr]


def run_on_ray(
    tasks: list[Task], splitter: SplitterConfig, spec: EncoderSpec, options: RayOptions, max_bytes: int,
    context: str = "none", limit: int = 512,
) -> Iterator[tuple[ReadFile, np.ndarray | None]]:
    """Each task's :class:`ReadFile` and its vectors (float32 ``(passages, d)``; ``None`` for a failed or
    unchanged file), in the order of ``tasks``, computed on Ray."""
    if not tasks:
        return
    import ray
    import ray.data

    connect(options)
    # Not named "context": that is the passage context the actors are built with, below.
    data_context = ray.data.DataContext.get_current()
    data_context.execution_options.preserve_order = True  # commit in walk order: the same ids as in-process
    data_context.enable_progress_bars = False
    ds = ray.data.from_items([{"task": pickle.dumps(t)} for t in tasks])
    ds = ds.map_batches(_prepare_batch, batch_size=PREPARE_BATCH, batch_format="numpy",
                        fn_kwargs={"splitter": splitter, "model": spec.model, "max_bytes": max_bytes},
                        num_cpus=PREPARE_CPUS)
    # Ray Data restarts a dead actor and retries its batches (its defaults for actor pools).
    ds = ds.map_batches(_EncodeActor, batch_size=ENCODE_BATCH, batch_format="numpy",
                        fn_constructor_kwargs={"spec": spec, "context": context, "limit": limit},
                        compute=ray.data.ActorPoolStrategy(size=options.actors),
                        num_cpus=options.actor_cpus, num_gpus=options.actor_gpus or None,
                        scheduling_strategy="SPREAD")
    for batch in ds.iter_batches(batch_size=ENCODE_BATCH, batch_format="numpy"):
        for raw, vec in zip(batch["prepared"], batch["vectors"], strict=True):
            yield pickle.loads(raw), (pickle.loads(vec) if vec else None)


@dataclass(frozen=True)
class RayStages:
    """The load, split and embed stages of one ingest on a Ray cluster (``pipeline.Stages``): made by
    :meth:`start`, handed to ``pipeline.Ingest``, which commits what they give back."""

    options: RayOptions
    spec: EncoderSpec  # pinned for the workers (EncoderSpec.pinned)
    splitter: SplitterConfig
    max_bytes: int
    context: str = "none"
    limit: int = 512

    @classmethod
    def start(
        cls, options: RayOptions, spec: EncoderSpec | None, splitter: SplitterConfig, max_bytes: int,
        context: str = "none", limit: int = 512,
    ) -> RayStages:
        """Connect to the cluster (before the writer lock and the walk: a cluster that cannot run fails at once)
        and decide once, here, what every actor of the run embeds with: ``spec`` pinned to this process's precision
        and backends. ``spec`` is ``None`` where the index was given an encoder, which cannot go to the workers:
        ``ConfigError``."""
        if spec is None:
            raise ConfigError("a Ray ingest embeds on the workers with the index's model; an encoder given to "
                              "Index(...) cannot go there: ingest with workers='local'")
        connect(options)
        return cls(options, spec.pinned(options.actor_gpus), splitter, max_bytes, context, limit)

    def embedded_with(self) -> EmbeddedWith:
        """What the workers embed with (asked by ``Ingest`` before it writes the first vectors)."""
        return EmbeddedWith.pinned(self.spec)

    def __call__(self, tasks: list[Task]) -> Iterator[tuple[ReadFile, np.ndarray | None]]:
        return run_on_ray(tasks, self.splitter, self.spec, self.options, self.max_bytes, self.context, self.limit)
