"""Batched SBERT-WK on hand-built tensors: windows, degenerate inputs, agreement with the per-token spec."""

from __future__ import annotations

import pytest
import torch

from searchapp.encode.pooling import get_pooling
from searchapp.encode.sbert_wk import layer_weights, sbert_wk, windows
from searchapp.errors import ConfigError
from tests.sbert_wk_reference import reference_sbert_wk


def test_windows_reproduce_the_reference_left_edge_quirk() -> None:
    # n = 5 layers, m = 2: for k = 1 the reference's X[-1:1] is empty, so the existing left neighbour is lost.
    assert windows(5, 2) == ((1, 2, 0), (2, 3, 1), (0, 1, 3, 4, 2), (1, 2, 4, 3), (2, 3, 4))
    assert windows(5, 2, clip_left=True)[1] == (0, 2, 3, 1)
    assert windows(1, 3) == ((0,),)


def random_batch(seed: int, lengths: list[int], layers: int = 7, d: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    t = max(lengths)
    h = torch.randn(layers, len(lengths), t, d, generator=g)
    mask = torch.zeros(len(lengths), t, dtype=torch.long)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
        h[:, i, n:, :] = 1e3  # garbage in padding must not leak into the result
    return h, mask


@pytest.mark.parametrize(
    ("layer_start", "window", "clip"),
    [(0, 1, False), (0, 2, False), (1, 2, True), (4, 2, False), (5, 1, False), (6, 1, False), (3, 9, False),
     (-2, 1, False)],
)
def test_batched_matches_per_token_reference(layer_start: int, window: int, clip: bool) -> None:
    lengths = [9, 1, 2, 5]
    h, mask = random_batch(0, lengths)
    out = sbert_wk(h, mask, layer_start=layer_start, window=window, clip_left=clip)
    assert out.shape == (4, 16) and out.dtype == torch.float32
    for i, n in enumerate(lengths):
        ref = reference_sbert_wk(h[:, i, :n, :], layer_start, window, clip)
        cos = torch.nn.functional.cosine_similarity(out[i].double(), ref, dim=0)
        assert cos >= 0.9999, (i, float(cos))
        assert torch.allclose(out[i].double(), ref, rtol=1e-3, atol=1e-4)


def test_degenerate_inputs_never_give_nan() -> None:
    h = torch.ones(7, 2, 4, 8)  # every layer identical: zero novelty, zero variance, rank-one windows
    mask = torch.tensor([[1, 1, 1, 1], [1, 0, 0, 0]])
    out = sbert_wk(h, mask, layer_start=0, window=2)
    assert torch.isfinite(out).all()
    assert torch.allclose(out, torch.ones(2, 8))
    zeros = sbert_wk(torch.zeros(7, 1, 3, 8), torch.ones(1, 3, dtype=torch.long))
    assert torch.isfinite(zeros).all() and torch.equal(zeros, torch.zeros(1, 8))


def test_layer_weights_sum_to_one() -> None:
    x = torch.randn(10, 6, 32, dtype=torch.float64)
    a = layer_weights(x @ x.transpose(1, 2), 2)
    assert a.shape == (10, 6)
    assert torch.allclose(a.sum(dim=1), torch.ones(10, dtype=torch.float64))


def test_bad_parameters_are_config_errors() -> None:
    h, mask = random_batch(1, [3])
    with pytest.raises(ConfigError, match="layer_start"):
        get_pooling("sbert-wk", layer_start=9)(h, mask)
    with pytest.raises(ConfigError, match="window"):
        get_pooling("sbert-wk", window=0)(h, mask)
    with pytest.raises(ConfigError, match="layers"):
        get_pooling("layers", layers=[7])(h, mask)


def test_fused_layers_mean_concat_and_cls() -> None:
    h, mask = random_batch(2, [3, 2], layers=4, d=4)
    mean = get_pooling("layers", layers=[-2, -1])(h, mask)
    manual = (h[2, 1, :2] + h[3, 1, :2]).mean(dim=0) / 2
    assert torch.allclose(mean[1], manual, atol=1e-6)
    concat = get_pooling("layers", layers=[1, 3], combine="concat")(h, mask)
    assert concat.shape == (2, 8)
    assert torch.allclose(concat[0, :4], h[1, 0, :3].mean(dim=0), atol=1e-6)
    assert torch.allclose(concat[0, 4:], h[3, 0, :3].mean(dim=0), atol=1e-6)
    cls = get_pooling("layers", layers=[0, 1], token="cls")(h, mask)
    assert torch.allclose(cls, (h[0, :, 0] + h[1, :, 0]) / 2)


def _weights(h: torch.Tensor, mask: torch.Tensor, start: int, window: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Layer weights (tokens x layers) and token importances of the real tokens, as sbert_wk computes them."""
    from searchapp.encode.sbert_wk import token_importance

    x = h[start:].double()
    n = x.shape[0]
    gram = torch.einsum("kbtd,lbtd->btkl", x, x).reshape(-1, n, n)
    used = mask.reshape(-1) > 0
    return layer_weights(gram, window)[used], token_importance(gram)[used]


def test_the_default_setting_lets_both_weightings_act() -> None:
    from searchapp.encode.pooling import sbert_wk_setting

    h, mask = random_batch(3, [9, 6])  # 7 hidden states: a 6-layer model, as the bundled one
    start, window = sbert_wk_setting(h.shape[0], None, None)
    assert (start, window) == (2, 1)  # the paper's (4, 2) on 12 layers, scaled to 6
    a, w = _weights(h, mask, start, window)
    assert a.shape[1] == 5
    assert float((a - 1 / a.shape[1]).abs().max()) > 1e-3  # layer weights differ from uniform
    assert float(w.std()) > 1e-4 and float(w.min()) > 0  # tokens weigh differently
    # The previous default (the last two hidden states) had neither: uniform 0.5/0.5 and zero variance.
    a2, w2 = _weights(h, mask, h.shape[0] - 2, 1)
    assert torch.allclose(a2, torch.full_like(a2, 0.5)) and float(w2.abs().max()) < 1e-12
    assert sbert_wk_setting(13, None, None) == (4, 2)  # a 12-layer model gets the paper's setting itself


def test_settings_where_a_weighting_cannot_act_are_refused() -> None:
    h, mask = random_batch(4, [5])
    for start in (-2, -1, 5, 6):
        with pytest.raises(ConfigError, match="needs at least 3"):
            get_pooling("sbert-wk", layer_start=start)(h, mask)
    assert torch.isfinite(get_pooling("sbert-wk", layer_start=4)(h, mask)).all()  # three layers: fine


@pytest.mark.parametrize(("layers", "layer_start", "window"), [(7, None, None), (13, None, None), (13, 4, 2)])
def test_default_and_twelve_layer_settings_match_the_reference(layers: int, layer_start, window) -> None:  # type: ignore[no-untyped-def]
    from searchapp.encode.pooling import sbert_wk_setting

    lengths = [8, 3, 5]
    h, mask = random_batch(5, lengths, layers=layers)
    start, m = sbert_wk_setting(layers, layer_start, window)
    out = get_pooling("sbert-wk", **({} if layer_start is None else {"layer_start": layer_start, "window": window}))(
        h, mask)
    for i, n in enumerate(lengths):
        ref = reference_sbert_wk(h[:, i, :n, :], start, m)
        assert torch.nn.functional.cosine_similarity(out[i].double(), ref, dim=0) >= 0.9999
