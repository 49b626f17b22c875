"""``IngestOptions``: how one ingest of files runs, checked once when the value is made.

The CLI (``ingest``, ``watch``), the evaluation of a folder and ``Index.ingest`` all make one; the root and the
``--workers`` value (a Ray cluster's address tried over TCP) are checked then, before any index is opened or
created, and nowhere again: ``Index.ingest`` and ``ingest/pipeline.Ingest`` take the value as it is.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchapp.collection import check_collection
from searchapp.errors import ConfigError, SearchappError
from searchapp.ingest.formats.load import MAX_FILE_BYTES
from searchapp.ingest.formats.registry import format_for, supported_suffixes
from searchapp.setting import MAX_FILE_MB, MAX_GPUS_PER_ACTOR, MAX_THREADS, number, whole

WORKERS_FORMS = "'local', 'ray' or 'ray:ADDRESS' (ray:auto, ray:HOST:PORT, ray:ray://HOST:PORT)"
# How long the cluster's address may take to answer a TCP connection before it is taken for nothing there.
REACH_TIMEOUT = 5.0


@dataclass(frozen=True)
class RayOptions:
    """Where and how: ``address`` of a running cluster (``None``: start a local one), encoder actors, CPUs each
    actor reserves, and GPUs each actor reserves (0: it embeds on CPUs; more: on the GPU Ray gives it, which it
    sees as ``cuda:0``)."""

    address: str | None = None
    actors: int = 1
    actor_cpus: float = 1.0
    actor_gpus: float = 0.0

    @classmethod
    def parse(cls, workers: str, actors: int = 1, gpus: float = 0) -> RayOptions:
        """``ray`` (a local cluster) or ``ray:ADDRESS`` (``ray:auto``, ``ray:HOST:PORT``, ``ray:ray://HOST:PORT``),
        ``gpus`` per actor; ``ConfigError`` naming the forms otherwise. Pure: nothing is imported, started or
        reached."""
        if not isinstance(workers, str):
            raise ConfigError(f"workers must be a string ({WORKERS_FORMS}), got {type(workers).__name__}")
        kind, colon, address = workers.partition(":")
        if kind != "ray" or (colon and not address):
            raise ConfigError(f"workers {workers!r}: use {WORKERS_FORMS}")
        if address and address != "auto":
            _host_port(address, workers)
        whole("actors", actors, ge=1, le=MAX_THREADS)
        number("gpus per actor", gpus, ge=0, le=MAX_GPUS_PER_ACTOR)
        return cls(address or None, actors, 1.0, float(gpus))


def _host_port(address: str, workers: str) -> tuple[str, int]:
    """The host and port of a cluster address (``HOST:PORT``, ``[IPv6]:PORT``, ``ray://HOST:PORT``)."""
    bare = address.removeprefix("ray://")
    host, _, port = bare.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c in host for c in "/@ "):
        raise ConfigError(f"workers {workers!r}: the address must be HOST:PORT (a port from 1 to 65535), or auto")
    return host, int(port)


# CPUs Ray reserves for the load-and-split tasks beside the encoder actors (with fewer, Ray would wait forever).
PREPARE_CPUS = 0.5


def check_cpus(options: RayOptions, cpus: float) -> None:
    """``ConfigError`` unless a cluster of ``cpus`` CPUs can run ``options``' actors and the load-and-split tasks."""
    need = options.actors * options.actor_cpus + PREPARE_CPUS
    if cpus < need:
        raise ConfigError(
            f"--actors {options.actors} needs {need:.10g} CPUs in the Ray cluster ({options.actor_cpus:g} per encoder "
            f"actor, {PREPARE_CPUS:g} for loading and splitting); it has {cpus:.10g}"
        )


def check_workers(workers: str, actors: int = 1, gpus: float = 0) -> RayOptions | None:
    """``workers`` checked before anything is created or loaded: ``None`` for ``local``, else the Ray options,
    with the cluster's address tried over TCP (``ConfigError`` in seconds when nothing answers there, instead of
    Ray retrying for minutes). ``gpus``: per encoder actor, for Ray only."""
    if workers == "local":
        if gpus:
            raise ConfigError("--gpus-per-actor reserves GPUs for Ray's encoder actors: use it with --workers ray "
                              "(in this process, --device picks the GPU)")
        return None
    options = RayOptions.parse(workers, actors, gpus)
    ray = sys.modules.get("ray")
    started = ray is not None and getattr(ray, "is_initialized", lambda: False)()  # a Ray this process runs already
    if options.address is None and not os.environ.get("RAY_ADDRESS") and not started:
        # A cluster this process would start has this machine's CPUs (Ray's default): too many actors are refused
        # here, before Ray starts (seconds) and before an index is created with settings a re-run would have to
        # match.
        check_cpus(options, float(os.cpu_count() or 1))
    if options.address is not None and options.address != "auto":
        host, port = _host_port(options.address, workers)
        try:
            socket.create_connection((host, port), timeout=REACH_TIMEOUT).close()
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
            raise ConfigError(f"cannot reach a Ray cluster at {options.address}: {reason}") from exc
    return options


def check_root(root: Path) -> None:
    """``SearchappError`` unless ``root`` is a folder or a file a loader claims (before any index is made)."""
    if not root.exists():
        raise SearchappError(
            f"{root}: no such file or folder (to drop what was indexed from it: searchapp remove {root})"
        )
    if root.is_file() and format_for(root) is None:
        # Named explicitly, not met in a walk: skipping it silently would report "added 0" as a success.
        raise ConfigError(f"{root}: unsupported file type '{root.suffix or root.name}' (supported: "
                          f"{', '.join(supported_suffixes())})")


def _strings(name: str, value: Collection[str], what: str = "patterns") -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable) or not all(isinstance(p, str) for p in value):
        raise ConfigError(f"{name} must be a list of {what} (strings)")
    return tuple(value)


@dataclass(frozen=True)
class IngestOptions:
    """One ingest of the files under ``root``: which (``include``/``exclude``: fnmatch patterns; ``within``: only
    the files at or under these absolute paths, under ``root``'s real path, are looked at, and only documents there
    are removed when missing), how (``max_file_mb``: larger files are skipped with a warning, 100 by default;
    ``follow_links``: links to files outside ``root`` too; ``ignore_rules``: leave out what the ignore files
    leave out, ``.gitignore`` and ``.ignore`` files and git's excludes (``ingest/ignore.py``; ``--no-ignore`` turns
    it off), so that a re-ingest removes what they now leave out; ``force``: read every file again, even one whose size
    and mtime are unchanged, as after a rewrite within one mtime tick or a clock set back; one whose content hash
    matches is still not re-embedded; ``reuse``: a changed, renamed or copied file's passages whose embedding input
    is unchanged keep their stored vectors and only the others are embedded (``ingest/reuse.py``); ``False``
    embeds every passage of a file read again, as benchmarks/reingest.py compares) and where (``workers``:
    ``local``, or ``ray`` / ``ray:ADDRESS`` with ``actors`` encoder actors reserving ``gpus_per_actor`` GPUs
    each), and into which named collection (``collection``: each file read or found unchanged is put in it, with
    ``description`` recorded where given; collection.py; ``None``: documents keep the collection they have).

    Making one checks them all: ``root`` exists and is a folder or a file a loader claims, and ``workers`` is a
    form Ray takes with an address that answers (:attr:`ray` holds the parsed Ray options, ``None`` for local).
    """

    root: Path
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    within: Collection[str] | None = None
    max_file_mb: float | None = None
    follow_links: bool = False
    ignore_rules: bool = True
    force: bool = False
    reuse: bool = True
    workers: str = "local"
    actors: int = 1
    gpus_per_actor: float = 0
    collection: str | None = None
    description: str | None = None
    ray: RayOptions | None = field(init=False, default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.root, str | os.PathLike):
            raise ConfigError(f"the root to ingest must be a path, got {type(self.root).__name__}")
        object.__setattr__(self, "root", Path(self.root))
        check_root(self.root)
        object.__setattr__(self, "ray", check_workers(self.workers, self.actors, self.gpus_per_actor))
        mb = self.max_file_mb
        if mb is not None and (not isinstance(mb, int | float) or isinstance(mb, bool) or not 0 < mb <= MAX_FILE_MB):
            raise ConfigError(f"max_file_mb must be a number of MB in (0, {MAX_FILE_MB}], got {mb!r}")
        object.__setattr__(self, "include", _strings("include", self.include))
        object.__setattr__(self, "exclude", _strings("exclude", self.exclude))
        if self.within is not None:
            object.__setattr__(self, "within", tuple(sorted(_strings("within", self.within, "paths"))))
        check_collection(self.collection, self.description)

    @classmethod
    def of(cls, root: str | os.PathLike[str] | IngestOptions, **options: Any) -> IngestOptions:
        """``root`` itself where it is an ``IngestOptions`` already (then no options beside it), else made from
        ``root`` and ``options`` (the fields by name)."""
        if not isinstance(root, IngestOptions):
            return cls(root, **options)  # type: ignore[arg-type]  # a str or PathLike: made a Path when checked
        if options:
            raise ConfigError(f"give {', '.join(sorted(options))} in the IngestOptions, not beside it")
        return root

    @property
    def max_bytes(self) -> int:
        """The largest file read, in bytes."""
        return MAX_FILE_BYTES if self.max_file_mb is None else int(self.max_file_mb * 2**20)
