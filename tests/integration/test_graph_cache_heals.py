"""The cache of the model's graphs heals: a cached graph that is short, empty, a link to a device, a FIFO, or
changed in place is found out before use and made again; a cache folder that cannot be made costs one warning;
processes making the int8 graph at once all succeed; a graph that cannot be made is one error naming the file;
another install's graphs are left alone (encode/cached_file.py).

The int8 graph is built once for the module (about 12 s: the fp32 export, then the quantisation); each test
works on a linked copy of that cache and breaks a file by replacing it, never by writing through the link."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from searchapp.encode import onnx_encoder  # noqa: E402
from searchapp.encode.cached_file import MANIFEST, problem  # noqa: E402
from searchapp.encode.onnx_encoder import OnnxEncoder, graph_path, int8_graph_path, load  # noqa: E402
from searchapp.encode.spec import EncoderSpec  # noqa: E402
from searchapp.errors import ModelLoadError  # noqa: E402
from tests.model_cache import filled_cache  # noqa: E402

MODEL = "all-MiniLM-L6-v2"
ROOT = Path(__file__).resolve().parents[2]
TEXTS = ["how do I rotate the signing keys?", "Tomatoes need deep watering twice a week in hot summers."]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache holding the bundled model's fp32 and int8 graphs, made once for the module."""
    return filled_cache(tmp_path_factory, "heal-cache", lambda: onnx_encoder.export_int8(MODEL))


@pytest.fixture(scope="module")
def reference(built: Path) -> np.ndarray:
    """The vectors of ``TEXTS`` through the int8 graph as it was made."""
    path = next((built / "onnx-int8").glob("*.onnx"))
    return OnnxEncoder(MODEL, "mean", path=path, precision="int8").encode(TEXTS)


@pytest.fixture()
def cache(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the built cache (hard links: a test replaces a file, never writes into one), in use."""
    copy = tmp_path / "cache"
    shutil.copytree(built, copy, copy_function=os.link)
    monkeypatch.setenv("SEARCHAPP_CACHE", str(copy))
    monkeypatch.setenv("SEARCHAPP_ONNX", "1")
    return copy


def replace_with(path: Path, data: bytes) -> None:
    path.unlink()
    path.write_bytes(data)


def changed_weights(path: Path) -> bytes:
    """The graph's bytes with one quantised weight matrix zeroed: the size and the graph's form unchanged."""
    import onnx

    data = path.read_bytes()
    graph = onnx.load_from_string(data)
    weight = max((t for t in graph.graph.initializer if t.data_type == onnx.TensorProto.INT8),
                 key=lambda t: len(t.raw_data))
    at = data.index(weight.raw_data)
    return data[:at] + bytes(len(weight.raw_data)) + data[at + len(weight.raw_data):]


@pytest.mark.parametrize("damage", ["truncated", "empty", "link to /dev/null", "weights changed"])
def test_a_broken_int8_graph_is_made_again_and_embeds_as_made(cache: Path, reference: np.ndarray, damage: str,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    target = int8_graph_path(MODEL)
    whole = target.read_bytes()
    if damage == "truncated":
        replace_with(target, whole[: len(whole) // 2])
    elif damage == "empty":
        replace_with(target, b"")
    elif damage == "link to /dev/null":
        target.unlink()
        target.symlink_to("/dev/null")
    else:
        replace_with(target, changed_weights(target))
        assert target.stat().st_size == len(whole)
    with caplog.at_level(logging.WARNING):
        encoder = load(MODEL, "mean", None, precision="int8")
    assert encoder is not None, "the broken graph was not made again"
    np.testing.assert_allclose(encoder.encode(TEXTS), reference, atol=1e-6)
    assert not target.is_symlink() and problem(target) is None
    assert any(str(target) in r.getMessage() and "made again" in r.getMessage() for r in caplog.records)


def test_a_fifo_in_the_graph_s_place_is_replaced_not_read(cache: Path, reference: np.ndarray) -> None:
    target = int8_graph_path(MODEL)
    target.unlink()
    os.mkfifo(target)
    code = ("from searchapp.encode.onnx_encoder import load; "
            f"e = load({MODEL!r}, 'mean', None, precision='int8'); print(e.encode({TEXTS!r}).tolist())")
    try:
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                              env=os.environ.copy())
    except subprocess.TimeoutExpired:
        pytest.fail("a query hung on the FIFO in the graph's place")
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.array(json.loads(done.stdout)), reference, atol=1e-6)
    assert problem(target) is None


def test_a_cache_folder_that_cannot_be_made_falls_back_with_one_warning(cache: Path, reference: np.ndarray,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    # A file where the int8 folder should be: no user, root included, can make the folder.
    shutil.rmtree(cache / "onnx-int8")
    (cache / "onnx-int8").write_text("not a folder")
    from searchapp.encode import cached_file

    monkeypatch.setattr(cached_file, "_fallback", None, raising=False)  # as in a new process
    with caplog.at_level(logging.WARNING):
        first = load(MODEL, "mean", None, precision="int8")
        second = load(MODEL, "mean", None, precision="int8")
    assert first is not None and second is not None, "no int8 graph without a writable cache"
    np.testing.assert_allclose(second.encode(TEXTS), reference, atol=1e-6)
    warned = [r.getMessage() for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(warned) == 1 and "SEARCHAPP_CACHE" in warned[0], warned


def test_three_processes_making_the_int8_graph_at_once_all_succeed(cache: Path, reference: np.ndarray) -> None:
    """Only the fp32 graph is cached; three processes quantise it at once. Beside the shared fp32 graph lies what
    a quantiser of another process would have there (the fixed-name ``-inferred.onnx``): none may be touched
    by it, nor write there."""
    shutil.rmtree(cache / "onnx-int8")
    fp32 = graph_path(MODEL)
    squatter = fp32.with_name(fp32.stem + "-inferred.onnx")
    squatter.mkdir()
    code = ("from searchapp.encode.onnx_encoder import load; "
            f"e = load({MODEL!r}, 'mean', None, precision='int8'); print(e.encode({TEXTS!r}).tolist())")
    runs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=os.environ.copy()) for _ in range(3)]
    outs = [run.communicate(timeout=120) for run in runs]
    for run, (out, err) in zip(runs, outs, strict=True):
        assert run.returncode == 0, err
        np.testing.assert_allclose(np.array(json.loads(out)), reference, atol=1e-6)
    target = int8_graph_path(MODEL)
    assert problem(target) is None
    # The graph, its record, its lock and the stat it was last hashed at: no maker's leftovers.
    assert sorted(p.name for p in target.parent.iterdir()) <= sorted([target.name, target.name + MANIFEST,
                                                                       target.name + ".lock",
                                                                       target.name + ".verified"])
    assert {target.name, target.name + MANIFEST} <= {p.name for p in target.parent.iterdir()}
    assert squatter.is_dir() and not any(squatter.iterdir())


def test_a_graph_that_cannot_be_made_is_one_error_naming_the_file(cache: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    target = int8_graph_path(MODEL)
    replace_with(target, b"")

    import onnxruntime.quantization

    def fails(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(onnxruntime.quantization, "quantize_dynamic", fails)
    with pytest.raises(ModelLoadError) as caught:
        EncoderSpec(precision="int8").build()
    message = str(caught.value)
    assert "\n" not in message and str(target) in message, message
    assert "No space left on device" in message and "SEARCHAPP_CACHE" in message, message


def test_another_install_s_graphs_are_left_alone(cache: Path) -> None:
    """Two installs with different tools share the cache, each with its own key: making this install's graph
    again removes neither the other's (its manifest names another install) nor a file without a record (which
    install wrote it is unknown). That this install's own older key goes: tests/unit/test_graph_cache.py."""
    target = int8_graph_path(MODEL)
    stem = target.name[: target.name.rindex("-") + 1]
    theirs = target.with_name(f"{stem}0123456789abcdef.onnx")
    theirs.write_bytes(b"another install's graph")
    theirs.with_name(theirs.name + MANIFEST).write_text(json.dumps({"files": {}, "owner": "another install"}))
    unrecorded = target.with_name(f"{stem}1111111111111111.onnx")
    unrecorded.write_bytes(b"a graph of an older searchapp")
    target.unlink()
    assert load(MODEL, "mean", None, precision="int8") is not None
    assert theirs.read_bytes() == b"another install's graph" and unrecorded.exists()


def test_a_graph_hashed_whole_once_is_not_hashed_again_by_the_next_process_until_it_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each one-shot query's process hashed the 60-90 MB graph again (0.05-0.07 s a run).
    from searchapp.encode import cached_file

    target = tmp_path / "model-0123456789abcdef.onnx"
    cached_file.made(target, lambda out: out.write_bytes(b"graph bytes " * 1000), "test")
    hashed: list[Path] = []
    real = cached_file.file_sha256
    monkeypatch.setattr(cached_file, "file_sha256", lambda path: hashed.append(path) or real(path))
    monkeypatch.setattr(cached_file, "_VERIFIED", {})  # a new process
    assert cached_file.problem(target) is None
    assert cached_file.problem(target) is None
    assert hashed == [] or hashed == [target]  # at most once: the stamp the maker wrote holds
    hashed.clear()
    monkeypatch.setattr(cached_file, "_VERIFIED", {})
    assert cached_file.problem(target) is None and hashed == []
    data = bytearray(target.read_bytes())
    data[5] ^= 1
    stat_before = target.stat()
    target.write_bytes(bytes(data))
    os.utime(target, ns=(stat_before.st_atime_ns, stat_before.st_mtime_ns))  # the modification time put back
    monkeypatch.setattr(cached_file, "_VERIFIED", {})
    assert "sha256 differs" in (cached_file.problem(target) or "")  # the change time moved: hashed, and caught
