"""The cache of a model's derived files (exported ONNX graph, OpenVINO model): keyed by what determines the file
(the model files' contents, the tools' versions, the recipe), not by where the model or searchapp is installed;
found under SEARCHAPP_CACHE, else XDG_CACHE_HOME, else ~/.cache; a replaced file removed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from searchapp.encode import cached_file, graph_cache
from searchapp.encode.onnx_encoder import graph_path
from searchapp.encode.openvino_encoder import ir_path
from searchapp.paths import cache_root


def fake_model(folder: Path, weights: bytes = b"weights") -> Path:
    """A model folder in the Hugging Face layout (only names and contents matter to the key)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"max_position_embeddings": 512}')
    (folder / "model.safetensors").write_bytes(weights)
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text("{}")
    return folder


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEARCHAPP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_two_installs_of_one_model_share_the_graph_and_changed_weights_make_a_new_one(cache: Path,
                                                                                        tmp_path: Path) -> None:
    first = fake_model(tmp_path / "install-a" / "site-packages" / "mini")
    second = fake_model(tmp_path / "install-b" / "lib" / "mini")
    assert graph_path(str(first)) == graph_path(str(second))
    assert ir_path(str(first)) == ir_path(str(second))
    assert graph_path(str(first)).parent == cache / "onnx"
    before = graph_path(str(second))
    (second / "model.safetensors").write_bytes(b"weights, fine-tuned")
    assert graph_path(str(second)) != before
    (second / "model.safetensors").write_bytes(b"weights")
    assert graph_path(str(second)) == before
    (second / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')  # in a sub-folder
    assert graph_path(str(second)) != before


def test_the_bundled_model_installed_in_two_places_shares_one_graph(cache: Path, tmp_path: Path) -> None:
    from searchapp.encode.catalog import model_dir

    elsewhere = tmp_path / "other-install" / "all-MiniLM-L6-v2"
    shutil.copytree(model_dir("all-MiniLM-L6-v2"), elsewhere)
    assert graph_path(str(elsewhere)) == graph_path("all-MiniLM-L6-v2")


def test_new_tool_versions_make_a_new_graph(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = str(fake_model(tmp_path / "mini"))
    before = graph_path(model), ir_path(model)
    real = graph_cache.tool_versions
    # Each tool keys the files it writes, and only those: torch writes both.
    for tool, onnx_changes, openvino_changes in (("torch", True, True), ("onnx", True, False),
                                                 ("onnxruntime", True, False), ("openvino", False, True)):
        monkeypatch.setattr(graph_cache, "tool_versions",
                            lambda tools, tool=tool: real(tools).replace(f"{tool}=", f"{tool}=9.9-"))
        assert (graph_path(model) != before[0], ir_path(model) != before[1]) == (onnx_changes, openvino_changes)


def test_a_files_digest_is_remembered_until_the_file_changes(cache: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    model = fake_model(tmp_path / "mini")
    first = graph_cache.model_digest(str(model))
    assert (cache / "digests.json").is_file()
    read: list[Path] = []
    real = graph_cache._file_sha256
    monkeypatch.setattr(graph_cache, "_file_sha256", lambda p: read.append(p) or real(p))
    assert graph_cache.model_digest(str(model)) == first and read == []  # a one-shot query reads no weights
    (model / "model.safetensors").write_bytes(b"other weights")
    assert graph_cache.model_digest(str(model)) != first
    assert [p.name for p in read] == ["model.safetensors"]
    (cache / "digests.json").write_text("not json")  # a damaged memo costs the hashing only
    assert graph_cache.model_digest(str(model)) == graph_cache.model_digest(str(model))


def recorded(path: Path, owner: str) -> Path:
    """``path`` written with a manifest naming ``owner`` as the install that wrote it."""
    path.write_bytes(b"x")
    path.with_name(path.name + cached_file.MANIFEST).write_text(json.dumps({"files": {}, "owner": owner}))
    return path


def test_a_replaced_file_is_removed_and_nothing_else(cache: Path, tmp_path: Path) -> None:
    """Only this install's older keys of the same model and kind go: not another install's (its manifest names
    another owner), not an unrecorded file, not another model's, a temporary file or a name without a key."""
    onnx = cache / "onnx"
    onnx.mkdir(parents=True)
    old = recorded(onnx / "mini-0123456789abcdef.onnx", "me")
    new = recorded(onnx / "mini-fedcba9876543210.onnx", "me")
    kept = [recorded(onnx / "mini-1111111111111111.onnx", "another install"),
            recorded(onnx / "mini-v2-0123456789abcdef.onnx", "me"),
            recorded(onnx / "other-0123456789abcdef.onnx", "me")]
    for name in ("mini-2222222222222222.onnx", "mini-fedcba9876543210.onnx.77.tmp", "mini-notakey.onnx"):
        (onnx / name).write_bytes(b"x")
    before = {p.name for p in onnx.iterdir()}
    assert cached_file.remove_replaced(new, "me") == [old, old.with_name(old.name + cached_file.MANIFEST)]
    assert {p.name for p in onnx.iterdir()} == before - {old.name, old.name + cached_file.MANIFEST}
    assert all(p.exists() for p in kept)
    ov = cache / "openvino"
    ov.mkdir()
    for key in ("0123456789abcdef", "fedcba9876543210"):
        recorded(ov / f"m-{key}.xml", "me")
        (ov / f"m-{key}.bin").write_bytes(b"x")
    removed = cached_file.remove_replaced(ov / "m-fedcba9876543210.xml", "me", companions=(".bin",))
    assert sorted(p.name for p in removed) == ["m-0123456789abcdef.bin", "m-0123456789abcdef.xml",
                                               "m-0123456789abcdef.xml.manifest"]
    assert sorted(p.name for p in ov.iterdir()) == ["m-fedcba9876543210.bin", "m-fedcba9876543210.xml",
                                                    "m-fedcba9876543210.xml.manifest"]


def test_two_installs_or_models_have_their_own_owner(tmp_path: Path) -> None:
    first = fake_model(tmp_path / "install-a" / "mini")
    second = fake_model(tmp_path / "install-b" / "mini")
    assert graph_cache.owner(str(first)) == graph_cache.owner(str(first))
    assert graph_cache.owner(str(first)) != graph_cache.owner(str(second))


def test_the_cache_folder_follows_searchapp_cache_then_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEARCHAPP_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_root() == Path.home() / ".cache" / "searchapp"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "searchapp"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # not absolute: ignored, as the specification says
    assert cache_root() == Path.home() / ".cache" / "searchapp"
    monkeypatch.setenv("SEARCHAPP_CACHE", str(tmp_path / "mine"))
    assert cache_root() == tmp_path / "mine"


def test_usage_counts_each_folder(cache: Path) -> None:
    (cache / "onnx").mkdir(parents=True)
    (cache / "onnx" / "g.onnx").write_bytes(b"x" * 10)
    (cache / "eval" / "set").mkdir(parents=True)
    (cache / "eval" / "set" / "index.db").write_bytes(b"x" * 5)
    assert graph_cache.usage() == {"onnx": 10, "eval": 5, "total": 15}
