"""One vector per text: a text's vector is the same alone or in any batch, on every precision the CPU flags given
allow and every backend that embeds it; the library's ``Encoder``, an index's stored vectors and ``/v1/embeddings``
agree; ``query --file`` ranks as single queries do; a folder ingested with two batch sizes stores the same vectors.

The int8 graph quantises its activations with one scale per run, so it runs each text alone
(encode/onnx_encoder.py); before, a text's vector moved with its neighbours by a cosine of up to 0.008."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from searchapp import Encoder, Index  # noqa: E402
from searchapp.cli import app  # noqa: E402
from searchapp.encode import openvino_encoder  # noqa: E402
from searchapp.encode.precision import INT8_FLAGS, cpu_flags, native_bf16  # noqa: E402
from tests.model_cache import filled_cache  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample"
SAME = 0.99999
# torch's bf16 autocast rounds a padded text's attention otherwise than an unpadded one's: a short text beside a
# long one moves by up to 2.5e-5 of cosine, bf16's own rounding (OpenVINO's bf16 graph does not move). An index's
# figures do not follow: its questions are embedded by the fp32 graph (encode/spec.py).
SAME_TORCH_BF16 = 0.9999
POOL = [
    "how are passages split?",
    "Rotate the signing keys every ninety days; the old key stays valid for a week so that tokens signed "
    "with it still verify.",
    "Tomatoes need deep watering twice a week in hot summers; mulch keeps the soil moist and the roots cool, "
    "and a drip line saves water.",
    "A",
    "Ünïcödé, emoji 🙂 and CJK 漢字 mixed with numbers 12345.",
    "The index keeps one row per passage, its vector as float32 bytes, and an FTS5 table over the text. " * 4,
    "what does `searchapp status` show about the cache?",
]


def _allowed() -> list[tuple[str, str, str]]:
    """(precision, SEARCHAPP_ONNX, SEARCHAPP_OPENVINO) for each backend that embeds passages under the CPU flags
    the suite was given (never the machine's own)."""
    cases = [("fp32", "1", "0"), ("fp32", "0", "0"), ("auto", "1", "1")]
    if INT8_FLAGS & cpu_flags():
        cases.append(("int8", "1", "0"))
    if native_bf16():
        cases.append(("bf16", "1", "0"))
        if openvino_encoder.installed():
            cases.append(("bf16", "1", "1"))
    return cases


@pytest.fixture(scope="module")
def graph_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache with the model's fp32 and int8 graphs, made once for the module."""
    from searchapp.encode.onnx_encoder import export_int8

    return filled_cache(tmp_path_factory, "graphs", lambda: export_int8("all-MiniLM-L6-v2"))


@pytest.fixture()
def graphs_on(graph_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEARCHAPP_CACHE", str(graph_cache))
    monkeypatch.setenv("SEARCHAPP_ONNX", "1")
    return graph_cache


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(axis=1))


@pytest.mark.parametrize(("precision", "onnx", "openvino"), _allowed())
def test_a_texts_vector_is_the_same_alone_and_in_any_batch(graphs_on: Path, monkeypatch: pytest.MonkeyPatch,
                                                           precision: str, onnx: str, openvino: str) -> None:
    monkeypatch.setenv("SEARCHAPP_ONNX", onnx)
    monkeypatch.setenv("SEARCHAPP_OPENVINO", openvino)
    encoder = Encoder(precision=precision, batch_size=4)
    same = SAME_TORCH_BF16 if (encoder.backend, encoder.precision) == ("torch", "bf16") else SAME
    alone: dict[str, np.ndarray] = {}

    def vector(text: str) -> np.ndarray:
        if text not in alone:
            alone[text] = encoder.encode([text])[0]
        return alone[text]

    texts = st.sampled_from(POOL) | st.text(min_size=1, max_size=300)

    @settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(target=texts, others=st.lists(texts, max_size=9), at=st.integers(min_value=0, max_value=9))
    def check(target: str, others: list[str], at: int) -> None:
        at = min(at, len(others))
        batch = [*others[:at], target, *others[at:]]
        assert float(encoder.encode(batch)[at] @ vector(target)) >= same, (target, others)

    check()
    # One fixed case the random ones may miss: a short text beside much longer ones (the most padding).
    batch = [POOL[3], POOL[5], POOL[2]]
    assert _cosines(encoder.encode(batch), np.vstack([vector(t) for t in batch])).min() >= same


def _stored(ix: Index) -> dict[str, np.ndarray]:
    return {p.path: p.vector for p in ix.export(vectors=True) if hasattr(p, "vector")}


def test_the_library_encoder_the_stored_vectors_and_the_embeddings_route_agree(graphs_on: Path,
                                                                              tmp_path: Path) -> None:
    """``searchapp.Encoder()`` (auto precision, as an index's default) gives the vectors an index stores for the
    same texts and those its ``/v1/embeddings`` returns: one encoder for every path."""
    import httpx

    from searchapp.server.app import create_app
    from tests.server_helpers import running

    texts = [POOL[1], POOL[2], POOL[6]]
    encoder = Encoder()
    mine = encoder.encode(texts)
    with Index(tmp_path / "ix", create=True) as ix:
        ix.add_texts(texts, ids=["a", "b", "c"])
        assert ix.stats().vectors_encoder == (encoder.backend,)
        assert ix.stats().vectors_precision == (encoder.precision,)
        stored = _stored(ix)
        with running(create_app(ix)) as url, httpx.Client(base_url=url, timeout=60) as http:
            answer = http.post("/v1/embeddings", json={"model": ix.config.model, "input": texts})
            assert answer.status_code == 200, answer.text
            served = np.array([d["embedding"] for d in answer.json()["data"]], dtype=np.float32)
    assert _cosines(mine, np.vstack([stored[i] for i in ("a", "b", "c")])).min() >= SAME
    assert _cosines(mine, served).min() >= SAME


def test_an_int8_index_ingested_in_two_batch_sizes_stores_the_same_vectors(graphs_on: Path, tmp_path: Path) -> None:
    vectors = []
    for batch in (32, 3):
        with Index(tmp_path / f"b{batch}", create=True, precision="int8", batch_size=batch) as ix:
            ix.ingest(SAMPLE)
            assert ix.stats().vectors_encoder == ("onnx-int8",)
            rows = sorted((p.path, p.start, p.vector.tolist()) for p in ix.export(vectors=True)
                          if hasattr(p, "vector"))
            vectors.append(np.array([r[2] for r in rows], dtype=np.float32))
    assert vectors[0].shape == vectors[1].shape and vectors[0].shape[0] >= 20
    assert _cosines(vectors[0], vectors[1]).min() >= SAME


def test_query_file_ranks_every_question_as_it_is_ranked_alone(graphs_on: Path, tmp_path: Path) -> None:
    """Questions of very different lengths, batched by ``query --file``, get the hits and scores each gets asked
    on its own, in every mode that embeds them."""
    index = str(tmp_path / "ix")
    runner = CliRunner()
    done = runner.invoke(app, ["ingest", str(SAMPLE), "--index", index, "--precision", "int8"])
    assert done.exit_code == 0, done.output
    questions = ["how are passages split?", "cache",
                 "what does the index keep for every passage of a document that was split into several parts, "
                 "and where are the vectors stored?"]
    file = tmp_path / "questions.txt"
    file.write_text("\n".join(questions) + "\n", encoding="utf-8")

    def hits(run: dict) -> list[tuple[int, float]]:  # type: ignore[type-arg]
        return [(h["passage_id"], round(h["score"], 6)) for h in run["hits"]]

    for mode in ("dense", "hybrid"):
        batched = runner.invoke(app, ["query", "--file", str(file), "--index", index, "--mode", mode, "--json"])
        assert batched.exit_code == 0, batched.output
        alone = []
        for q in questions:
            one = runner.invoke(app, ["query", q, "--index", index, "--mode", mode, "--json"])
            assert one.exit_code == 0, one.output
            alone.append(hits(json.loads(one.stdout)))
        assert [hits(json.loads(line)) for line in batched.stdout.splitlines()] == alone


SAMPLE_QUESTIONS = {  # a question about data/sample -> the file that answers it
    "how are passages split?": "architecture.md",
    "what does searchapp status show": "README.txt",
    "Which command lists the options of a query?": "cli.pdf",
    "what is a passage": "glossary.docx",
    "why does the first query take longer than the next ones, and how can a server load the model before the "
    "first request arrives?": "faq.html",
}


@pytest.mark.parametrize(("precision", "onnx"), [("fp32", "0"), ("fp32", "1"),
                                                 *([("int8", "1")] if INT8_FLAGS & cpu_flags() else [])])
def test_eval_ranks_every_question_as_a_search_ranks_it(graphs_on: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch, precision: str,
                                                        onnx: str) -> None:
    """``searchapp eval``'s runs of a folder's questions are those a search of each question alone gives: the same
    passages with the same scores in dense and hybrid mode, the same documents grouped. Before, eval embedded its
    questions in one batch, whose padding moves a torch fp32 vector in its last bits."""
    from searchapp.config import IndexConfig
    from searchapp.eval_index import prepare_folder
    from searchapp.query.fusion import fuse

    monkeypatch.setenv("SEARCHAPP_ONNX", onnx)
    questions = tmp_path / "questions.tsv"
    questions.write_text("".join(f"{q}\t{target}\n" for q, target in SAMPLE_QUESTIONS.items()), encoding="utf-8")
    check = prepare_folder(SAMPLE, questions, IndexConfig(precision=precision), index_dir=str(tmp_path / "ix"))
    prepared = check.prepared
    grouped = prepared.run_for("hybrid")
    with Index(tmp_path / "ix", read_only=True) as ix:
        for qid, text in check.items.queries.items():
            runs = prepared.runs[qid]
            dense = ix.search(text, mode="dense", k=10)
            assert [(h.passage_id, h.score) for h in dense] == runs.dense[:10], text
            hybrid = ix.search(text, mode="hybrid", k=10)
            assert [(h.passage_id, h.score) for h in hybrid] == fuse(runs.candidates, prepared.fusion)[:10], text
            documents = ix.search(text, mode="hybrid", k=5, group_by="document")
            assert [prepared.doc_of[h.passage_id] for h in documents] == grouped[qid][:5], text
