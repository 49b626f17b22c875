"""What the scripts in benchmarks/ share: where the checkout and the evaluation data are, the visible splits, the
record of the machine a figure was measured on, a per-call timer, and the JSON and table output.

A script run as ``python benchmarks/NAME.py`` has benchmarks/ first on ``sys.path``, so ``from _common import ...``
finds this file and the scripts import one another by name (``from query import corpus``); a study in
benchmarks/studies/ imports ``_path`` first, which puts benchmarks/ on the path too. Importing this module puts
the checkout's root in front, so that the scripts measure this checkout's searchapp, not an installed one; or
the checkout that ``SEARCHAPP_BENCH_CHECKOUT`` names, to time another version with these scripts (a before /
after comparison: ``PYTHONPATH`` cannot do it, this goes in front of it). The machine record names the searchapp
that was imported and its commit (``searchapp_from``, ``commit``).

The standard library only: benchmarks/peers.py runs its peers on interpreters without searchapp's dependencies.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
# The evaluation data lie beside the checkout, in CI as here (../shared/data/README.md); SEARCHAPP_BENCH_DATA
# names another folder of the same layout (tests/integration/test_benchmarks.py: tiny sets of its own).
DATA = Path(os.environ.get("SEARCHAPP_BENCH_DATA") or ROOT.parent / "shared" / "data")
# The checkout whose searchapp is measured (above).
CHECKOUT = Path(os.environ.get("SEARCHAPP_BENCH_CHECKOUT") or ROOT).resolve()
sys.path.insert(0, str(CHECKOUT))

# The visible retrieval collections and the split of each the benchmarks measure on (../shared/data/README.md).
SETS: dict[str, str] = {
    "scifact": "train", "wikiqa": "dev", "antique": "train", "trecqa-dev": "dev", "trecqa-train": "train",
}
# The same as a --sets value: "scifact:train,wikiqa:dev,...".
SETS_OPTION = ",".join(f"{name}:{split}" for name, split in SETS.items())

# Distributions whose versions move the figures; those not installed are left out of the record.
VERSIONED = ("searchapp", "torch", "onnxruntime", "openvino", "nncf", "faiss-cpu", "numpy", "tokenizers")

T = TypeVar("T")


def parse_sets(option: str) -> list[tuple[str, str]]:
    """A --sets value, ``"NAME:SPLIT,NAME:SPLIT,..."``, as ``[(NAME, SPLIT), ...]`` in its order."""
    out = []
    for item in option.split(","):
        name, split = item.split(":")
        out.append((name, split))
    return out


def _sqlite(source: str | None) -> str:
    """The SQLite library and version the measured searchapp (imported from ``source``) connects through
    (``pysqlite3 3.51.1``); without searchapp, or for a checkout from before searchapp chose its library, the
    standard module's. Asked of the checkout's own files: an editable install elsewhere would answer for a module
    that checkout lacks."""
    if source is None or not (Path(source) / "searchapp" / "sqlite_driver.py").is_file():
        return f"sqlite3 {sqlite3.sqlite_version}"
    from searchapp.sqlite_driver import describe

    return describe()


def machine(**extra: object) -> dict[str, object]:
    """The machine a figure is measured on, as the scripts' ``"machine"`` key records it: ``platform`` (the OS and
    kernel), ``arch``, ``processor`` (``platform.processor()``), ``cpu_model`` (/proc/cpuinfo's model name),
    ``cpus``, ``memory_gib``, ``load_avg_1m`` (at this call: take the record before the timed work), ``python``,
    ``sqlite`` (the library the measured searchapp connects through, and its version), ``versions``
    (``{distribution: version}`` of ``VERSIONED``), ``searchapp_from`` (the folder the measured searchapp was
    imported from) and ``commit`` (its checkout's ``git describe --always --dirty``), then ``extra`` (a script's
    own settings, e.g. ``threads``). A value the system does not give is None."""
    source = _searchapp_from()
    record: dict[str, object] = {
        "platform": platform.platform(), "arch": platform.machine(), "processor": platform.processor(),
        "cpu_model": _cpu_model(), "cpus": os.cpu_count(), "memory_gib": _memory_gib(),
        "load_avg_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(), "sqlite": _sqlite(source), "versions": _versions(),
        "searchapp_from": source, "commit": _commit(source),
    }
    record.update(extra)
    return record


def machine_line(record: Mapping[str, Any] | str) -> str:
    """A machine record in one line, for a text header or a plot's title: ``"x86_64, 2 cores, 23.5 GiB, CPU MODEL,
    Python 3.11.7, torch 2.13.0, 2 threads"``. A string is returned as it is (results written before the record
    was shared held one)."""
    if isinstance(record, str):
        return record
    parts = [str(record.get("arch")), f"{record.get('cpus')} cores"]
    if record.get("memory_gib") is not None:
        parts.append(f"{record['memory_gib']} GiB")
    if record.get("cpu_model"):
        parts.append(str(record["cpu_model"]))
    parts.append(f"Python {record.get('python')}")
    torch = (record.get("versions") or {}).get("torch")
    if torch:
        parts.append(f"torch {torch}")
    if "threads" in record:
        parts.append(f"{record['threads']} threads")
    return ", ".join(parts)


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (AttributeError, ValueError, OSError):
        return None


def _searchapp_from() -> str | None:
    """The folder holding the searchapp package the script imported (imported here if it has not been yet)."""
    try:
        import searchapp
    except ImportError:  # peers.py's children run on interpreters without it
        return None
    return str(Path(searchapp.__file__).resolve().parents[1])


def _commit(folder: str | None) -> str | None:
    if folder is None:
        return None
    try:
        out = subprocess.run(["git", "-C", folder, "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def _versions() -> dict[str, str]:
    out = {}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def command() -> str:
    """The command line this script was started with, as the results record it."""
    return " ".join(sys.argv)


def call_ms(fn: Callable[[T], object], items: Sequence[T], warmup: int = 0) -> list[float]:
    """Milliseconds of ``fn(item)`` for every item, in order, after the first ``warmup`` items have run once
    untimed (first calls allocate, fill caches and pick kernels)."""
    for item in items[:warmup]:
        fn(item)
    out = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        out.append((time.perf_counter() - t) * 1000)
    return out


def print_json(result: object) -> None:
    """Print ``result`` as a script's ``--json`` does: one JSON document, indented."""
    print(json.dumps(result, indent=1))


def markdown_table(header: Sequence[object], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table: ``header``'s cells, the rule under them, then one line per row (cells as ``str`` gives
    them; format numbers before)."""
    lines = [_table_line(header), "|" + "---|" * len(header)]
    lines += [_table_line(row) for row in rows]
    return "\n".join(lines)


def _table_line(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def key_values(result: Mapping[str, Any], digits: int | None = None) -> str:
    """``result`` one key a line, keys right-aligned: the machine record as ``machine_line`` gives it, floats
    rounded to ``digits`` where given."""
    width = max((len(k) for k in result), default=0)
    lines = []
    for k, v in result.items():
        if k == "machine":
            v = machine_line(v)
        elif digits is not None and isinstance(v, float):
            v = round(v, digits)
        lines.append(f"{k:>{width}}: {v}")
    return "\n".join(lines)
