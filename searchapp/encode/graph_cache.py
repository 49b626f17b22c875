"""Where a model's derived files (the exported ONNX graph, OpenVINO's converted model) are cached, and under what
key.

A derived file is named by what determines it and nothing else: the contents of the model's files, the versions
of the tools that wrote it (torch's exporter, onnx, ONNX Runtime's optimizer; OpenVINO's converter) and the recipe
(opset, attention form, fusions). Two installs in two folders of the same model and tools share one file; changed
weights or a new torch make a new one, and the older file that this install wrote of that model is removed once
the new one is whole (replaced, never silently reused); files other installs wrote under other keys stay theirs
(:func:`owner`). The install's path is not part of the key: it determines nothing. How a cached file is checked
before use, made again when broken, and made by one process at a time: encode/cached_file.py.

Hashing a model's files reads them (about 90 MB for all-MiniLM-L6-v2, 0.1 s), which a one-shot query should not
pay each time: each file's digest is remembered in ``<cache>/digests.json`` under its path, size, modification
time and inode, and read again only when one of those changes.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata
from pathlib import Path

from searchapp.encode.catalog import canonical_name, model_dir
from searchapp.paths import cache_root

_DIGESTS = "digests.json"


def tool_versions(tools: tuple[str, ...]) -> str:
    """``name=version`` of each installed distribution in ``tools`` (``name=none`` where it is missing), read from
    the installed metadata without importing the tool."""
    parts = []
    for tool in tools:
        try:
            parts.append(f"{tool}={metadata.version(tool)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{tool}=none")
    return ",".join(parts)


def model_digest(model: str) -> str:
    """sha256 (hex) over the names and contents of ``model``'s files (the model folder, sub-folders included)."""
    folder = model_dir(model)
    memo_path = cache_root() / _DIGESTS
    memo = _read_memo(memo_path)
    changed = False
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        st = f.stat()
        real = str(f.resolve())
        stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
        known = memo.get(real)
        if isinstance(known, dict) and known.get("stamp") == stamp and isinstance(known.get("sha256"), str):
            digest = known["sha256"]
        else:
            digest = _file_sha256(f)
            memo[real] = {"stamp": stamp, "sha256": digest}
            changed = True
        h.update(f"{f.relative_to(folder).as_posix()}\0{digest}\0".encode())
    if changed:
        _write_memo(memo_path, memo)
    return h.hexdigest()


def derived_path(model: str, kind: str, recipe: str, tools: tuple[str, ...], suffix: str) -> Path:
    """``<cache>/<kind>/<model name>-<key>.<suffix>``: the key a hash of the model's contents, ``recipe`` and the
    versions of ``tools``."""
    key = hashlib.sha256(f"{recipe}\0{tool_versions(tools)}\0{model_digest(model)}".encode()).hexdigest()[:16]
    return cache_root() / kind / f"{_file_name(model)}-{key}{suffix}"


def owner(model: str) -> str:
    """Who writes a derived file of ``model``: this install of searchapp with this model folder, as a short hash.
    Recorded beside each file written, so that cleaning up removes only this install's older files of the model:
    two installs sharing the cache with different tools (different keys) would otherwise remove each other's."""
    package = Path(__file__).resolve().parents[1]
    return hashlib.sha256(f"{package}\0{model_dir(model).resolve()}".encode()).hexdigest()[:16]


def usage() -> dict[str, int]:
    """Bytes under each folder of the cache (``onnx``, ``openvino``, ``models``, ``eval``...), and ``total``."""
    root = cache_root()
    sizes: dict[str, int] = {}
    if root.is_dir():
        for entry in root.iterdir():
            if entry.is_dir():
                sizes[entry.name] = sum(p.stat().st_size for p in entry.rglob("*") if p.is_file())
            elif entry.is_file():
                sizes[entry.name] = entry.stat().st_size
    sizes["total"] = sum(sizes.values())
    return sizes


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _file_name(model: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(canonical_name(model)).name)


def _read_memo(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_memo(path: Path, memo: dict[str, object]) -> None:
    """Written whole or not at all; a cache that cannot be written only costs the next process the hashing."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(memo, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass
