"""Who embeds a bf16 index's passages: OpenVINO where the CPU's flags say bf16 is native and the package is
installed (``auto`` there), unless ``SEARCHAPP_OPENVINO=0``; torch otherwise. The flags are a stand-in
(``SEARCHAPP_CPU_FLAGS``) and the package's presence is faked, so these run without OpenVINO; no model is loaded (the
backends' encoders are stand-ins). And a cache of evaluated vectors is keyed by the backend family that embedded
them, so a torch bf16 cache is never read back as OpenVINO's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from searchapp.config import IndexConfig
from searchapp.encode import onnx_encoder, openvino_encoder, precision
from searchapp.encode.encoder import TorchEncoder
from searchapp.encode.spec import EncoderSpec, backend_of
from searchapp.evaluate.runner import index_path

AMX = "fpu sse avx2 avx512f avx512bw amx_tile amx_bf16"
AVX512_BF16 = "fpu avx2 avx512f avx512_bf16"
NO_BF16 = "fpu sse avx2 avx512f avx512bw"


@pytest.fixture()
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, object]]:
    """A machine whose CPU flags (``flags``) and installed OpenVINO (``installed``) a test sets; the OpenVINO
    switch left at its default, ONNX off, and the encoders stand-ins."""
    state: dict[str, object] = {"installed": True}

    def set_flags(flags: str) -> None:
        monkeypatch.setenv(precision.CPU_FLAGS_ENV, flags)
        precision.native_bf16.cache_clear()

    state["flags"] = set_flags
    monkeypatch.delenv(openvino_encoder.ENV_SWITCH, raising=False)  # the default, not the test suite's
    monkeypatch.setenv("SEARCHAPP_ONNX", "0")
    monkeypatch.setattr(openvino_encoder, "installed", lambda: bool(state["installed"]))
    monkeypatch.setattr(openvino_encoder, "load",
                        lambda *a, **k: object.__new__(openvino_encoder.OpenVinoEncoder))
    monkeypatch.setattr(onnx_encoder, "load", lambda *a, **k: object.__new__(onnx_encoder.OnnxEncoder))
    set_flags(AMX)
    yield state
    precision.native_bf16.cache_clear()


def ingests_with(**spec: str) -> str | None:
    return backend_of(EncoderSpec(**spec).build("ingest"))  # type: ignore[arg-type]


@pytest.mark.parametrize("flags", [AMX, AVX512_BF16])
def test_auto_ingests_through_openvino_where_the_cpu_has_bf16_and_the_package_is_installed(
        machine: dict[str, object], flags: str) -> None:
    machine["flags"](flags)  # type: ignore[operator]
    assert EncoderSpec(precision="auto").embeds_in == "bf16"
    assert ingests_with(precision="auto") == "openvino"
    assert EncoderSpec(precision="auto").ingests_with.name == "openvino"
    assert ingests_with(precision="bf16") == "openvino"
    assert ingests_with(precision="fp32") == "torch"  # fp32 asked: never OpenVINO's bf16
    assert ingests_with(precision="auto", pooling="sbert-wk") == "torch"  # all layers: torch's alone


def test_a_cpu_without_bf16_instructions_never_gets_openvino(machine: dict[str, object]) -> None:
    machine["flags"](NO_BF16)  # type: ignore[operator]
    assert EncoderSpec(precision="auto").embeds_in == "fp32"
    assert ingests_with(precision="auto") == "torch"
    # bf16 asked on such a CPU: torch emulates it; OpenVINO would run the hint in fp32 and the record would lie.
    assert ingests_with(precision="bf16") == "torch"


def test_without_the_package_or_with_the_opt_out_torch_embeds(machine: dict[str, object],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    machine["installed"] = False
    built = EncoderSpec(precision="auto").build("ingest")
    assert isinstance(built, TorchEncoder) and built.precision == "auto"  # torch, resolving auto to bf16 itself
    assert EncoderSpec(precision="auto").embeds_in == "bf16"
    machine["installed"] = True
    monkeypatch.setenv(openvino_encoder.ENV_SWITCH, "0")
    assert ingests_with(precision="auto") == "torch"
    assert EncoderSpec(precision="auto").pinned().backends == ("torch",)  # ONNX is off here too


def test_queries_never_go_through_openvino(machine: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    # An index's questions embed as before the default changed: the ONNX graph where it serves, else torch.
    spec = EncoderSpec(precision="auto")
    ingest = spec.build("ingest")
    assert backend_of(ingest) == "openvino"
    assert backend_of(spec.query_encoder(ingest)) == "torch"
    monkeypatch.setenv("SEARCHAPP_ONNX", "1")
    monkeypatch.setattr(onnx_encoder, "runtime_available", lambda: True)
    assert backend_of(spec.query_encoder(ingest)) == "onnx"


def test_the_eval_cache_key_tells_openvino_from_torch(machine: dict[str, object], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = tmp_path / "scifact"
    bf16, fp32 = IndexConfig(precision="bf16"), IndexConfig(precision="fp32")
    through_openvino = index_path(corpus, bf16)
    monkeypatch.setenv(openvino_encoder.ENV_SWITCH, "0")
    through_torch = index_path(corpus, bf16)
    assert through_openvino != through_torch
    fp32_key = index_path(corpus, fp32)
    monkeypatch.delenv(openvino_encoder.ENV_SWITCH)
    assert index_path(corpus, fp32) == fp32_key  # fp32 is torch's (or its ONNX graph's) either way
    machine["installed"] = False
    assert index_path(corpus, bf16) == through_torch  # no OpenVINO here: torch bf16's cache, as before
