"""The ONNX query path: the same vectors as the torch path, used by queries without importing torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from searchapp import Index  # noqa: E402
from searchapp.cli import app  # noqa: E402
from searchapp.encode.encoder import TorchEncoder  # noqa: E402
from searchapp.encode.onnx_encoder import OnnxEncoder, graph_path, query_encoder  # noqa: E402
from tests.model_cache import filled_cache  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [
    "how do I rotate the signing keys?",
    "",
    "Tomatoes need deep watering twice a week in hot summers; mulch keeps the soil moist.",
    "Ünïcödé, emoji 🙂 and CJK 漢字 mixed with numbers 12345.",
    "word " * 600,  # beyond the model's 512 pieces: cut like the torch path cuts it
]


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder holding the bundled model's exported graph (exported once per session)."""
    from searchapp.encode.onnx_encoder import export

    return filled_cache(tmp_path_factory, "onnx-cache", lambda: export("all-MiniLM-L6-v2"))


@pytest.fixture()
def onnx_on(onnx_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEARCHAPP_CACHE", str(onnx_cache))
    monkeypatch.setenv("SEARCHAPP_ONNX", "1")
    return onnx_cache


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_onnx_vectors_equal_the_torch_path(onnx_on: Path, pooling: str) -> None:
    fast = OnnxEncoder("all-MiniLM-L6-v2", pooling)
    ref = TorchEncoder(pooling=pooling, precision="fp32").encode(TEXTS, truncate=True)
    got = fast.encode(TEXTS, truncate=True)
    assert got.dtype == np.float32 and got.shape == ref.shape == (len(TEXTS), 384)
    cos = (got * ref).sum(axis=1)
    assert cos.min() >= 0.9999, cos
    with pytest.raises(Exception, match="exceeds the model limit"):
        fast.encode([TEXTS[-1]])  # not cut unless asked, as the torch path


def test_poolings_onnx_cannot_run_and_a_broken_graph_fall_back_to_torch(onnx_on: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    assert query_encoder("all-MiniLM-L6-v2", "sbert-wk", {}, None) is None
    assert query_encoder("all-MiniLM-L6-v2", "mean", {"x": 1}, None) is None
    assert isinstance(query_encoder("all-MiniLM-L6-v2", "mean", {}, None), OnnxEncoder)
    broken = tmp_path / "cache"
    target = graph_path("all-MiniLM-L6-v2").relative_to(onnx_on)
    (broken / target).parent.mkdir(parents=True)
    (broken / target).write_bytes(b"not a graph")
    monkeypatch.setenv("SEARCHAPP_CACHE", str(broken))
    assert query_encoder("all-MiniLM-L6-v2", "mean", {}, None, export_missing=False) is None
    monkeypatch.setenv("SEARCHAPP_ONNX", "0")
    assert query_encoder("all-MiniLM-L6-v2", "mean", {}, None) is None


def test_a_query_process_embeds_without_importing_torch(onnx_on: Path, tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "keys.md").write_text("Rotate the signing keys every ninety days with keyctl.")
    (tmp_path / "docs" / "garden.txt").write_text("Tomatoes need deep watering twice a week.")
    assert CliRunner().invoke(app, ["ingest", "docs", "--precision", "fp32"]).exit_code == 0
    probe = ("import sys, json; from searchapp import Index\n"
             "with Index('.searchapp') as ix:\n"
             "    hits = ix.search('how often are the signing keys rotated?', k=2)\n"
             "print(json.dumps({'torch': 'torch' in sys.modules, 'hits': [[h.path, h.score] for h in hits]}))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    fast = json.loads(subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                                     check=True, cwd=tmp_path).stdout)
    slow = json.loads(subprocess.run([sys.executable, "-c", probe], env={**env, "SEARCHAPP_ONNX": "0"},
                                     capture_output=True, text=True, check=True, cwd=tmp_path).stdout)
    assert fast["torch"] is False and slow["torch"] is True
    assert [h[0] for h in fast["hits"]] == [h[0] for h in slow["hits"]]
    assert fast["hits"][0][0].endswith("keys.md")
    assert np.allclose([h[1] for h in fast["hits"]], [h[1] for h in slow["hits"]], atol=1e-4)


def test_eval_scores_are_unchanged_through_onnx(onnx_on: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.integration.test_eval import write_beir

    ds = write_beir(tmp_path / "tiny")
    args = ["eval", str(ds), "--split", "test", "--mode", "all", "--json", "--precision", "fp32"]
    fast = json.loads(CliRunner().invoke(app, args).stdout)["results"]
    monkeypatch.setenv("SEARCHAPP_ONNX", "0")
    slow = json.loads(CliRunner().invoke(app, args).stdout)["results"]
    for mode in ("dense", "hybrid"):
        assert fast[mode] == pytest.approx(slow[mode], abs=1e-9), mode


@pytest.mark.parametrize("cpu", ["no-bf16", "bf16"])
def test_ingest_exports_the_graph_for_later_queries(cpu: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whichever encoder embeds the passages (the graph itself for fp32 on a CPU without bf16, torch for bf16),
    an ingest leaves the graph behind for the queries that follow."""
    from searchapp.encode import precision
    from tests.conftest import CPU_FLAG_SETS

    monkeypatch.setenv(precision.CPU_FLAGS_ENV, CPU_FLAG_SETS[cpu])
    precision.native_bf16.cache_clear()
    monkeypatch.setenv("SEARCHAPP_CACHE", str(tmp_path / "fresh-cache"))
    monkeypatch.setenv("SEARCHAPP_ONNX", "1")
    try:
        assert not graph_path("all-MiniLM-L6-v2").exists()
        with Index(tmp_path / "ix", create=True) as ix:
            ix.add_texts(["a text to embed"], ids=["t"])
            assert graph_path("all-MiniLM-L6-v2").exists()
            assert isinstance(ix.query_encoder, OnnxEncoder)
    finally:
        precision.native_bf16.cache_clear()


def test_the_exported_graph_is_fused(onnx_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The export runs ONNX Runtime's transformer fusions: one Attention node a layer (the speed of a warm query
    rests on it; the exporter's default attention form fuses nothing)."""
    import onnx

    monkeypatch.setenv("SEARCHAPP_CACHE", str(onnx_cache))
    graph = onnx.load(str(graph_path("all-MiniLM-L6-v2")))
    ops = [n.op_type for n in graph.graph.node]
    assert ops.count("Attention") == 6 and ops.count("SkipLayerNormalization") == 12, sorted(set(ops))


def test_an_fp32_ingest_embeds_through_onnx_without_torch_and_as_torch_would(onnx_on: Path, tmp_path: Path) -> None:
    """Where the graph exists, an fp32 index ingests with it: the process never imports torch, and the stored
    vectors equal a torch ingest's; a bf16 index keeps torch."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, text in enumerate(TEXTS[:4]):
        (docs / f"d{i}.txt").write_text(text or "empty", encoding="utf-8")
    probe = ("import sys, json, numpy as np; from searchapp import Index\n"
             "with Index(sys.argv[1], create=True, precision=sys.argv[2]) as ix:\n"
             "    ix.ingest(sys.argv[3])\n"
             "    rows = sorted((p.path, p.start, p.vector.tolist())\n"
             "                  for p in ix.export(vectors=True) if hasattr(p, 'vector'))\n"
             "    kind = type(ix.encoder).__name__\n"
             "print(json.dumps({'torch': 'torch' in sys.modules, 'encoder': kind, 'vectors': [r[2] for r in rows]}))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def ingest(name: str, precision: str, **extra: str) -> dict:  # type: ignore[type-arg]
        out = subprocess.run([sys.executable, "-c", probe, str(tmp_path / name), precision, str(docs)],
                             env={**env, **extra}, capture_output=True, text=True, check=True, cwd=tmp_path)
        return json.loads(out.stdout)

    fast = ingest("fast", "fp32")
    slow = ingest("slow", "fp32", SEARCHAPP_ONNX="0")
    assert fast["encoder"] == "OnnxEncoder" and fast["torch"] is False
    assert slow["encoder"] == "TorchEncoder" and slow["torch"] is True
    got, ref = np.array(fast["vectors"]), np.array(slow["vectors"])
    assert got.shape == ref.shape and got.shape[0] >= 4
    assert (got * ref).sum(axis=1).min() >= 0.9999
    assert ingest("bf16", "bf16")["encoder"] == "TorchEncoder"


def test_an_int8_index_embeds_passages_and_questions_through_the_quantised_graph(onnx_on: Path,
                                                                                  tmp_path: Path) -> None:
    """``--precision int8``: the fp32 graph quantised once into the cache, passages and questions both embedded by
    it (one session), the index's record saying so, vectors close to fp32's and the ranking the same here."""
    from searchapp.encode.onnx_encoder import int8_graph_path

    docs = tmp_path / "docs"
    docs.mkdir()
    for i, text in enumerate(TEXTS[2:4]):
        (docs / f"d{i}.txt").write_text(text, encoding="utf-8")
    vectors = {}
    for precision in ("int8", "fp32"):
        with Index(tmp_path / precision, create=True, precision=precision) as ix:
            ix.ingest(docs)
            stats = ix.stats().to_dict()
            vectors[precision] = np.array([v for _, v in sorted(
                (p.path, p.vector) for p in ix.export(vectors=True) if hasattr(p, "vector"))])
            if precision == "int8":
                assert int8_graph_path("all-MiniLM-L6-v2").exists()
                assert (stats["vectors_precision"], stats["vectors_encoder"]) == ("int8", "onnx-int8")
                assert ix.query_encoder is ix.encoder and ix.encoder.precision == "int8"  # type: ignore[attr-defined]
                hits = ix.search("how often should tomatoes be watered?", k=2)
                assert hits[0].path.endswith("d0.txt")
            else:
                assert stats["vectors_encoder"] == "onnx"
    got, ref = vectors["int8"], vectors["fp32"]
    assert got.shape == ref.shape and (got * ref).sum(axis=1).min() >= 0.98


@pytest.mark.parametrize(("precision", "switch", "backend"),
                         [("fp32", "1", "onnx"), ("bf16", "1", "torch"), ("fp32", "0", "torch"),
                          ("int8", "1", "onnx-int8")])
def test_ray_actors_build_the_encoder_of_a_local_ingest(onnx_on: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        precision: str, switch: str, backend: str) -> None:
    """The spec a Ray ingest hands its actors builds the encoder a local ingest of the index uses (the ONNX graph
    for fp32, torch for bf16 or with SEARCHAPP_ONNX=0), and the actors' vectors are the local ones. The actor
    runs in this process, on the spec as Ray ships it (pickled)."""
    import pickle

    import searchapp.ingest.distributed as distributed
    from searchapp.encode.spec import backend_of

    monkeypatch.setenv("SEARCHAPP_ONNX", switch)
    seen: dict[str, object] = {}

    def in_this_process(tasks, splitter, spec, options, max_bytes, context, limit):  # type: ignore[no-untyped-def]
        spec = pickle.loads(pickle.dumps(spec))
        actor = distributed._EncodeActor(spec, context, limit)
        seen.update(spec=spec, encoder=actor.encoder)
        batch = {"task": np.array([pickle.dumps(t) for t in tasks], dtype=object)}
        out = actor(distributed._prepare_batch(batch, splitter, spec.model, max_bytes))
        for raw, vec in zip(out["prepared"], out["vectors"], strict=True):
            yield pickle.loads(raw), (pickle.loads(vec) if vec else None)

    monkeypatch.setattr(distributed, "connect", lambda options: None)
    monkeypatch.setattr(distributed, "run_on_ray", in_this_process)
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, text in enumerate(TEXTS[:4]):
        (docs / f"d{i}.txt").write_text(text or "empty", encoding="utf-8")

    def vectors(ix: Index) -> np.ndarray:
        return np.array([p.vector for p in sorted((p for p in ix.export(vectors=True) if hasattr(p, "vector")),
                                                  key=lambda p: (p.path, p.start))])

    with Index(tmp_path / "ray", create=True, precision=precision) as ix:
        ix.ingest(docs, workers="ray")
        remote = vectors(ix)
        assert ix.stats().vectors_precision == (precision,)
    with Index(tmp_path / "local", create=True, precision=precision) as ix:
        ix.ingest(docs)
        local = vectors(ix)
        assert backend_of(seen["encoder"]) == backend_of(ix.encoder) == backend
    assert seen["spec"].precision == precision  # type: ignore[attr-defined]
    assert remote.shape == local.shape and remote.shape[0] >= 4
    # The actors embed other batches than the local ingest: the same vectors all the same, to float rounding (torch's
    # bf16 autocast rounds a padded text otherwise: tests/integration/test_one_vector_per_text.py).
    assert (remote * local).sum(axis=1).min() >= (0.9999 if backend == "torch" and precision == "bf16" else 0.99999)
