"""The device setting: strings parsed and validated once (encode/device.py), ``auto`` without a GPU is the CPU, a
GPU asked for where there is none is a clear one-line error, and the spec routes a GPU's ingest to torch."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchapp import DeviceError, Encoder, Index
from searchapp.cli import app
from searchapp.encode import device
from searchapp.encode.precision import resolve
from searchapp.encode.spec import EncoderSpec
from searchapp.errors import ConfigError


@pytest.fixture()
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process sees no GPU, whatever the machine has."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setattr(device, "cuda_count", lambda: 0)


@pytest.mark.parametrize("good", ["auto", "cpu", "cuda", "cuda:0", "cuda:7", "cuda:12"])
def test_device_strings_are_accepted(good: str) -> None:
    assert device.check_device(good) == good


@pytest.mark.parametrize("bad", ["", "gpu", "CPU", "cuda:", "cuda:-1", "cuda:01", "cuda:x", "cuda0", "mps", " cpu", 0])
def test_bad_device_strings_are_one_typed_line(bad: object) -> None:
    with pytest.raises(DeviceError) as info:
        device.check_device(bad)
    message = str(info.value)
    assert message.startswith(f"unknown device {bad!r}: use one of auto, cpu, cuda, cuda:N") and "\n" not in message
    assert isinstance(info.value, ConfigError)  # the edges map it as every bad setting


def test_auto_without_a_gpu_is_the_cpu(no_gpu: None) -> None:
    assert device.resolve_device("auto") == "cpu"
    assert device.device_class("auto") == "cpu"
    assert EncoderSpec(device="auto").on == "cpu"


def test_no_driver_means_no_gpu_without_asking_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(device, "NVIDIA_GPUS", tmp_path / "missing")
    assert not device._driver_shows_gpu()
    (tmp_path / "gpus" / "0000:17:00.0").mkdir(parents=True)
    monkeypatch.setattr(device, "NVIDIA_GPUS", tmp_path / "gpus")
    assert device._driver_shows_gpu()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")  # hidden from this process
    assert not device._driver_shows_gpu()


def test_a_gpu_asked_for_where_there_is_none_is_refused_clearly(no_gpu: None, tmp_path: Path) -> None:
    for name in ("cuda", "cuda:1"):
        with pytest.raises(DeviceError, match=f"device {name}: no CUDA GPU is usable here"):
            device.resolve_device(name)
    with pytest.raises(DeviceError, match="no CUDA GPU"):
        Index(tmp_path / "ix", create=True, device="cuda")
    assert not (tmp_path / "ix").exists()  # refused before anything was created
    with pytest.raises(DeviceError, match="no CUDA GPU"):
        Encoder(device="cuda").encode(["a text"])
    with pytest.raises(DeviceError, match="unknown device 'gpu'"):
        Encoder(device="gpu")


def test_a_gpu_number_beyond_the_machines_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device, "cuda_count", lambda: 2)
    assert device.resolve_device("cuda") == "cuda:0"
    assert device.resolve_device("auto") == "cuda:0"
    assert device.resolve_device("cuda:1") == "cuda:1"
    with pytest.raises(DeviceError, match=r"device cuda:2: this machine has 2 CUDA GPUs \(cuda:0..cuda:1\)"):
        device.resolve_device("cuda:2")


def test_fp16_is_a_gpus_precision() -> None:
    with pytest.raises(ConfigError, match="precision fp16 runs on a CUDA GPU only"):
        resolve("fp16", "cpu")
    assert resolve("fp16", "cuda:0") == "fp16"
    assert resolve("fp32", "cuda:0") == "fp32"


def test_a_gpu_ingest_goes_through_torch_and_its_workers_embed_on_their_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device, "cuda_count", lambda: 1)
    gpu = EncoderSpec(precision="fp32", device="cuda")
    assert gpu.on == "cuda"
    assert [b.name for b in gpu._candidates("ingest")] == ["torch"]  # the ONNX graph runs on the CPU
    # Ray GPU actors: each sees its own GPU as cuda:0; auto is fp16 there (the driver cannot ask their GPUs).
    pinned = EncoderSpec(precision="auto", device="auto").pinned(gpus=1)
    assert (pinned.device, pinned.precision) == ("cuda", "fp16")
    assert EncoderSpec(precision="bf16").pinned(gpus=0.5).precision == "bf16"
    on_cpu = EncoderSpec(precision="fp32", device="auto").pinned()
    assert on_cpu.device == "cpu"


def test_gpus_per_actor_without_ray_is_refused(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("some text")
    with Index(tmp_path / "ix", create=True, encoder=fake_encoder) as ix:
        with pytest.raises(ConfigError, match="--gpus-per-actor reserves GPUs for Ray's encoder actors: use it with "
                           r"--workers ray \(in this process, --device picks the GPU\)"):
            ix.ingest(tmp_path / "docs", gpus_per_actor=1)
        assert ix.stats().documents == 0


@pytest.mark.parametrize("command", [["ingest", "docs"], ["eval", "data"], ["serve"]])
def test_the_cli_says_a_bad_device_in_one_line(command: list[str], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch, no_gpu: None) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("some text")
    for bad, said in (("gpu", "unknown device 'gpu'"), ("cuda", "device cuda: no CUDA GPU is usable here")):
        res = runner.invoke(app, [*command, "--device", bad])
        assert res.exit_code != 0 and "Traceback" not in res.output, res.output
        assert said in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / ".searchapp").exists()


runner = CliRunner()


@pytest.mark.cuda
def test_gpu_vectors_agree_with_the_cpus() -> None:
    if device.cuda_count() == 0:
        pytest.skip("no CUDA GPU here")
    import numpy as np

    texts = ["Rotate the signing keys before the audit.", "The passages are split by sentence.",
             "A GPU embeds large batches sorted by length."] * 100
    cpu = Encoder(precision="fp32", device="cpu").encode(texts)
    for precision in ("fp32", "auto", "fp16"):
        gpu = Encoder(precision=precision, device="cuda").encode(texts)
        assert gpu.dtype == np.float32 and gpu.shape == cpu.shape
        assert float((gpu * cpu).sum(axis=1).min()) >= 0.999, precision


@pytest.mark.cuda
def test_a_gpu_ingest_records_its_device(tmp_path: Path) -> None:
    if device.cuda_count() == 0:
        pytest.skip("no CUDA GPU here")
    with Index(tmp_path / "ix", create=True, device="cuda") as ix:
        ix.add_texts(["first text", "second text"], ids=["a", "b"])
        stats = ix.stats().to_dict()
    assert stats["vectors_device"] == "cuda" and stats["vectors_precision"] in ("bf16", "fp16")
