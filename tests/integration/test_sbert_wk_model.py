"""Batched SBERT-WK against the per-token reference on real sentences through the real model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from searchapp import Encoder
from searchapp.encode.sbert_wk import sbert_wk
from tests.sbert_wk_reference import reference_sbert_wk

SENTENCES = [
    "",  # [CLS] [SEP]: one token used
    "Hi",  # two tokens used
    "The signing keys are rotated every ninety days by the security team.",
    "A man is playing a guitar on the stage while the audience sings along with him loudly.",
    "Tokyo",
    "Unbelievably, the quantum-chromodynamics lecture was postponed again!",
]


@pytest.fixture(scope="module")
def states(real_encoder: Encoder):  # type: ignore[no-untyped-def]
    model = real_encoder._load()
    return model.forward(SENTENCES)


@pytest.mark.parametrize(
    ("layer_start", "window", "clip"),
    [(0, 1, False), (0, 2, False), (1, 2, False), (4, 2, False), (4, 1, False), (5, 2, False), (6, 1, False),
     (2, 3, True), (3, 6, False), (-2, 1, False)],
)
def test_batched_matches_reference_on_real_states(states, layer_start: int, window: int, clip: bool) -> None:  # type: ignore[no-untyped-def]
    h, mask = states.hidden_states, states.attention_mask
    out = sbert_wk(h, mask, layer_start=layer_start, window=window, clip_left=clip)
    for i in range(len(SENTENCES)):
        n = int(mask[i].sum())
        ref = reference_sbert_wk(h[:, i, :n, :], layer_start, window, clip)
        cos = torch.nn.functional.cosine_similarity(out[i].double(), ref, dim=0)
        assert cos >= 0.9999, (SENTENCES[i], float(cos))


def test_encoder_with_sbert_wk_and_layers_gives_unit_vectors(real_encoder: Encoder) -> None:
    texts = SENTENCES[2:]
    for pooling, params, dim in [
        ("sbert-wk", {"layer_start": 4, "window": 2}, 384),
        ("layers", {"layers": [-2, -1]}, 384),
        ("layers", {"layers": [-2, -1], "combine": "concat"}, 768),
    ]:
        enc = Encoder(pooling=pooling, pooling_params=params)
        vecs = enc.encode(texts)
        assert vecs.shape == (len(texts), dim) and vecs.dtype == np.float32
        assert enc.dimension == dim
        assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
        assert np.isfinite(vecs).all()
