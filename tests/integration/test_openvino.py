"""The OpenVINO bf16 ingest path: chosen for bf16 passages on a CPU with bf16 instructions where OpenVINO is
installed, the same vectors as torch's to a cosine of 0.999, and switched off by SEARCHAPP_OPENVINO=0 (the choice
itself, without OpenVINO: tests/unit/test_openvino_choice.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("openvino")

from searchapp import Index  # noqa: E402
from searchapp.encode import precision  # noqa: E402
from searchapp.encode.encoder import TorchEncoder  # noqa: E402
from searchapp.encode.spec import EncoderSpec, backend_of  # noqa: E402
from tests.model_cache import filled_cache  # noqa: E402


@pytest.fixture(autouse=True)
def bf16_cpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """These tests run as a CPU with bf16 instructions, whatever this one has (``--cpu-flags`` aside): the choice
    follows the flags given, and OpenVINO runs its bf16 hint on any CPU (in fp32 where the CPU lacks bf16)."""
    from tests.conftest import CPU_FLAG_SETS

    monkeypatch.setenv(precision.CPU_FLAGS_ENV, CPU_FLAG_SETS["bf16"])
    precision.native_bf16.cache_clear()
    yield
    precision.native_bf16.cache_clear()

TEXTS = [
    "Rotate the signing keys before the audit.",
    "Passages are split by sentence within a budget of word pieces.",
    "x",
    "word " * 300,
]


@pytest.fixture(scope="module")
def ir_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder holding the bundled model converted for OpenVINO (once per module)."""
    from searchapp.encode.openvino_encoder import convert

    return filled_cache(tmp_path_factory, "ov-cache", lambda: convert("all-MiniLM-L6-v2"))


@pytest.fixture()
def openvino_on(ir_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEARCHAPP_CACHE", str(ir_cache))
    monkeypatch.setenv("SEARCHAPP_OPENVINO", "1")
    return ir_cache


@pytest.mark.parametrize("pooling", ["max"])  # mean: the index test below
def test_openvino_vectors_agree_with_torch_fp32(openvino_on: Path, pooling: str) -> None:
    encoder = EncoderSpec(pooling=pooling, precision="auto").build("ingest")
    assert backend_of(encoder) == "openvino" and encoder.precision == "bf16"
    fast = encoder.encode(TEXTS)
    ref = TorchEncoder(pooling=pooling, precision="fp32").encode(TEXTS)
    assert fast.dtype == np.float32 and fast.shape == ref.shape
    np.testing.assert_allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)
    assert float((fast * ref).sum(axis=1).min()) >= 0.999


def test_only_bf16_last_layer_passages_go_through_openvino(openvino_on: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def ingest_backends(**spec: str) -> list[str]:
        return [b.name for b in EncoderSpec(**spec)._candidates("ingest")]  # type: ignore[arg-type]

    assert "openvino" in ingest_backends(precision="bf16")
    assert "openvino" not in ingest_backends(precision="fp32")
    assert "openvino" not in ingest_backends(pooling="sbert-wk", precision="bf16")
    assert "openvino" not in [b.name for b in EncoderSpec(precision="bf16")._candidates("query")]
    monkeypatch.setenv("SEARCHAPP_OPENVINO", "0")
    assert "openvino" not in ingest_backends(precision="bf16")


def test_an_auto_index_ingests_through_openvino_and_records_bf16(openvino_on: Path, tmp_path: Path) -> None:
    with Index(tmp_path / "ix", create=True) as ix:
        assert backend_of(ix.encoder) == "openvino"
        ix.add_texts(TEXTS, ids=["a", "b", "c", "d"])
        stats = ix.stats().to_dict()
        hits = ix.search("signing keys", k=1, mode="dense")
        stored = ix.encoder.encode(TEXTS)
    ref = TorchEncoder(precision="fp32").encode(TEXTS)
    assert float((stored * ref).sum(axis=1).min()) >= 0.999
    assert (stats["vectors_precision"], stats["vectors_device"], stats["vectors_encoder"]) == ("bf16", "cpu",
                                                                                           "openvino")
    assert hits[0].text.startswith("Rotate the signing keys")
