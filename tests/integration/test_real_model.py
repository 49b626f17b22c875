"""End to end with the real bundled model on a small multi-format folder written by the test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from searchapp import Encoder, Index, IndexConfig
from searchapp.encode.encoder import TorchEncoder
from searchapp.encode.tokenizer import load_tokenizer
from searchapp.ingest.formats.load import load_document

SECTIONS = {
    "keys.md": "# Signing keys\n\nTo rotate the signing keys, run `keyctl rotate`. The old key stays valid for "
    "24 hours so that tokens already issued keep working. Rotation is logged in the audit trail.\n",
    "garden.txt": "Tomatoes need six hours of direct sunlight and deep watering twice a week. Mulch keeps "
    "the soil moist and suppresses weeds during hot summers.\n",
    "backup.html": "<html><head><title>Backups</title><script>var x = 1;</script></head><body><h1>Backups"
    "</h1><p>Nightly backups of the database are copied to cold storage and kept for &ldquo;90 days"
    "&rdquo;. Restore a backup with the restore command and a date.</p></body></html>",
}
PDF_TEXT = (
    "Employees may work remotely up to three days a week. Remote work requests are approved by the team "
    "manager and reviewed every quarter."
)
DOCX_TEXT = (
    "The cafeteria serves vegetarian lunch options every day. Menus are published on Monday morning "
    "and include allergy information."
)
QUESTIONS = {
    "how do I rotate the signing keys?": "keys.md",
    "how often should tomatoes be watered?": "garden.txt",
    "how long are database backups kept?": "backup.html",
    "how many days can I work from home?": "policy.pdf",
    "is there vegetarian food for lunch?": "cafeteria.docx",
}


def write_folder(root: Path) -> None:
    from docx import Document as Docx
    from fpdf import FPDF

    root.mkdir()
    for name, body in SECTIONS.items():
        (root / name).write_text(body)
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, PDF_TEXT)
    pdf.output(str(root / "policy.pdf"))
    doc = Docx()
    doc.add_heading("Cafeteria", level=1)
    doc.add_paragraph(DOCX_TEXT)
    doc.save(str(root / "cafeteria.docx"))
    # A long document, so that splitting produces several passages per file.
    (root / "long.txt").write_text(" ".join(f"Sentence number {i} talks about topic {i % 7}." for i in range(400)))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, real_encoder: Encoder) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("real")
    write_folder(base / "docs")
    with Index(base / "ix", create=True, config=IndexConfig.from_flat(max_tokens=128), encoder=real_encoder) as ix:
        summary = ix.ingest(base / "docs")
    assert summary.failed == 0 and summary.added == 6
    return base / "docs", base / "ix"


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_questions_find_the_right_document_first(built, real_encoder, mode: str) -> None:  # type: ignore[no-untyped-def]
    _, ix_path = built
    with Index(ix_path, encoder=real_encoder) as ix:
        for question, expected in QUESTIONS.items():
            hits = ix.search(question, k=3, mode=mode)
            assert Path(hits[0].path).name == expected, (question, [h.path for h in hits])


def test_every_passage_has_exact_offsets_and_fits_the_model(built, real_encoder) -> None:  # type: ignore[no-untyped-def]
    docs, ix_path = built
    tok = load_tokenizer("all-MiniLM-L6-v2")
    with Index(ix_path, encoder=real_encoder) as ix:
        records = ix.stores.hydrate(list(range(1, 10_000)))
        assert len(records) == ix.stats().passages > 6
        texts = {p: load_document(Path(p)).text for p in {r.path for r in records.values()}}
        for rec in records.values():
            assert texts[rec.path][rec.start : rec.end] == rec.text
            assert len(tok.encode(rec.text).ids) <= 128  # special tokens included
        per_doc = {p: sum(1 for r in records.values() if r.path == p) for p in texts}
        assert per_doc[str(docs / "long.txt")] > 10


def test_encoder_api_shape_dtype_and_similarity(real_encoder: Encoder) -> None:
    vecs = real_encoder.encode(["rotate the signing keys", "key rotation for signing", "tomato watering"])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.2
    assert real_encoder.encode([]).shape == (0, 384)


def test_batching_does_not_change_vectors(real_encoder: Encoder) -> None:
    texts = ["short", "a somewhat longer sentence about keys", "x " * 50]
    one_by_one = np.vstack([real_encoder.encode([t]) for t in texts])
    assert np.allclose(real_encoder.encode(texts), one_by_one, atol=1e-5)


def test_overlong_text_is_refused_unless_truncation_is_asked(real_encoder: Encoder) -> None:
    from searchapp.errors import ConfigError

    with pytest.raises(ConfigError, match="exceeds"):
        real_encoder.encode(["word " * 600])
    assert real_encoder.encode(["word " * 600], truncate=True).shape == (1, 384)


def test_bf16_vectors_agree_with_fp32(real_encoder: Encoder) -> None:
    texts = ["Rotate the signing keys every ninety days.", "Tomatoes need water.", "x " * 40]
    bf16 = Encoder(precision="bf16").encode(texts)
    fp32 = real_encoder.encode(texts)
    assert bf16.dtype == np.float32
    assert (bf16 * fp32).sum(axis=1).min() > 0.999


@pytest.mark.parametrize("pooling", ["mean", "cls", "max", "sep"])
def test_a_last_layer_pooling_runs_the_forward_pass_for_the_last_layer_alone(pooling: str) -> None:
    """Poolings of the last layer are handed that layer alone (not a stack of every layer, which costs a copy
    and about 180 MB more peak memory over an ingest batch of 32 x 256), with the same vectors."""
    import torch

    from searchapp.encode.pooling import get_pooling

    texts = ["Rotate the signing keys every ninety days.", "Tomatoes need water.", "x " * 40]
    enc = TorchEncoder(pooling=pooling, precision="fp32")
    model = enc._load()
    seen: list[int] = []
    forward = model.forward

    def spy(batch: list[str], truncate: bool = False, all_layers: bool = True):  # type: ignore[no-untyped-def]
        states = forward(batch, truncate=truncate, all_layers=all_layers)
        seen.append(states.hidden_states.shape[0])
        return states

    model.forward = spy  # type: ignore[method-assign]
    try:
        got = enc.encode(texts)
    finally:
        del model.forward
    assert seen and set(seen) == {1}
    full = forward(texts)
    ref = torch.nn.functional.normalize(get_pooling(pooling)(full.hidden_states, full.attention_mask), dim=-1)
    assert full.hidden_states.shape[0] == model.num_layers + 1
    assert np.allclose(got, ref.numpy(), atol=1e-5)
