"""``EncoderSpec`` chooses the backend: ONNX for fp32 passages and for every query where it serves the pooling,
torch otherwise; a pinned spec carries the driver's precision and backends to workers. No model is loaded: the
ONNX backend's encoder is a stand-in, and torch's ``TorchEncoder`` loads its model only on first use."""

from __future__ import annotations

import pytest

from searchapp.encode import onnx_encoder
from searchapp.encode.encoder import LazyEncoder, TorchEncoder
from searchapp.encode.spec import BACKENDS, EncoderSpec, backend_of
from searchapp.errors import ConfigError


@pytest.fixture()
def graph(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """ONNX on and its graph loadable; returns the models an ``OnnxEncoder`` was made for."""
    made: list[str] = []

    def load(model: str, pooling: str, threads: int | None, export_missing: bool = True,
             batch_size: int = 32, precision: str = "fp32") -> onnx_encoder.OnnxEncoder:
        made.append(f"{model}:{precision}")
        encoder = object.__new__(onnx_encoder.OnnxEncoder)  # no session: the choice is what is tested
        encoder.precision = precision
        return encoder

    monkeypatch.setenv("SEARCHAPP_ONNX", "1")
    monkeypatch.setattr(onnx_encoder, "runtime_available", lambda: True)
    monkeypatch.setattr(onnx_encoder, "load", load)
    return made


def test_fp32_ingests_and_queries_share_one_onnx_encoder(graph: list[str]) -> None:
    spec = EncoderSpec(precision="fp32")
    ingest = LazyEncoder(spec.build)
    assert backend_of(ingest.loaded) == "onnx"
    assert spec.query_encoder(ingest) is ingest.loaded
    assert len(graph) == 1  # one session for both


def test_bf16_ingests_with_torch_and_queries_through_onnx(graph: list[str]) -> None:
    spec = EncoderSpec(precision="bf16")
    ingest = LazyEncoder(spec.build)
    assert backend_of(spec.query_encoder(ingest)) == "onnx"
    assert backend_of(ingest.loaded) == "torch" and ingest.loaded.precision == "bf16"  # type: ignore[attr-defined]


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_torch_everywhere_when_onnx_cannot_serve(graph: list[str], monkeypatch: pytest.MonkeyPatch,
                                                 precision: str) -> None:
    for spec in (EncoderSpec(precision=precision, pooling="sep"),
                 EncoderSpec(precision=precision, pooling="layers", pooling_params={"layers": [-1]})):
        ingest = spec.build()
        assert isinstance(ingest, TorchEncoder) and spec.query_encoder(ingest) is ingest
    assert graph == []
    monkeypatch.setattr(onnx_encoder, "load", lambda *a, **k: None)  # no graph, and the export failed
    spec = EncoderSpec(precision=precision)
    ingest = spec.build()
    assert isinstance(ingest, TorchEncoder) and spec.query_encoder(ingest) is ingest


def test_a_pinned_spec_carries_the_drivers_decisions(graph: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    spec = EncoderSpec(precision="auto")
    pinned = spec.pinned()
    assert pinned.precision == spec.embeds_in in ("fp32", "bf16", "int8")
    assert pinned.backends == tuple(b for b in BACKENDS if b != "openvino")  # switched off in tests (conftest)
    monkeypatch.setenv("SEARCHAPP_ONNX", "0")
    assert EncoderSpec(precision="fp32").pinned().backends == ("torch",)
    assert isinstance(EncoderSpec(precision="fp32").build(), TorchEncoder)
    # A worker whose own environment differs still embeds as the driver decided.
    assert backend_of(EncoderSpec(precision="fp32", backends=("onnx", "torch")).build()) == "onnx"


def test_bad_specs_are_refused() -> None:
    with pytest.raises(ConfigError, match="fp16"):
        EncoderSpec(precision="fp16")
    with pytest.raises(ConfigError, match="unknown encoder backend cuda"):
        EncoderSpec(backends=("cuda",))


def test_int8_ingests_and_queries_share_one_quantised_graph(graph: list[str]) -> None:
    spec = EncoderSpec(precision="int8")
    ingest = LazyEncoder(spec.build)
    assert backend_of(ingest.loaded) == "onnx-int8"
    assert spec.query_encoder(ingest) is ingest.loaded  # questions embedded alike, one session
    assert graph == ["all-MiniLM-L6-v2:int8"]


def test_auto_is_int8_on_an_avx2_cpu_without_bf16_where_the_graph_can_run(
    graph: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from searchapp.encode import precision

    monkeypatch.setenv(precision.CPU_FLAGS_ENV, "fpu sse2 avx avx2 fma")
    precision.native_bf16.cache_clear()
    try:
        assert EncoderSpec(precision="auto").embeds_in == "int8"
        assert backend_of(EncoderSpec(precision="auto").build()) == "onnx-int8"
        # A pooling the graph cannot run, or ONNX switched off: fp32 through torch, never a refusal.
        for spec in (EncoderSpec(precision="auto", pooling="sbert-wk"),
                     EncoderSpec(precision="auto", pooling="layers", pooling_params={"layers": [-1]})):
            assert spec.embeds_in == "fp32" and isinstance(spec.build(), TorchEncoder)
        monkeypatch.setenv("SEARCHAPP_ONNX", "0")
        assert EncoderSpec(precision="auto").embeds_in == "fp32"
        assert isinstance(EncoderSpec(precision="auto").build(), TorchEncoder)
    finally:
        precision.native_bf16.cache_clear()


def test_int8_is_refused_where_it_cannot_run() -> None:
    with pytest.raises(ConfigError, match="int8 runs through the model's ONNX graph: pooling 'sbert-wk'"):
        EncoderSpec(precision="int8", pooling="sbert-wk")
    from searchapp.encode.precision import resolve

    with pytest.raises(ConfigError, match="int8 runs on the CPU only"):
        resolve("int8", "cuda")
