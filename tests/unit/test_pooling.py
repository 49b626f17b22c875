import pytest
import torch

from searchapp.encode.pooling import get_pooling, masked_mean, pooling_names
from searchapp.errors import ConfigError


def _states() -> tuple[torch.Tensor, torch.Tensor]:
    # 2 layers (+ embeddings), batch of 2, 3 positions, d = 2; second sentence has one padding position.
    h = torch.arange(3 * 2 * 3 * 2, dtype=torch.float32).reshape(3, 2, 3, 2)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    return h, mask


def test_mean_pools_last_layer_over_real_tokens_only() -> None:
    h, mask = _states()
    out = get_pooling("mean")(h, mask)
    assert out.shape == (2, 2)
    assert torch.allclose(out[0], h[-1, 0].mean(dim=0))
    assert torch.allclose(out[1], h[-1, 1, :2].mean(dim=0))


def test_cls_takes_first_token_of_last_layer() -> None:
    h, mask = _states()
    out = get_pooling("cls")(h, mask)
    assert torch.equal(out, h[-1, :, 0, :])


def test_masked_mean_of_empty_row_is_zero_not_nan() -> None:
    out = masked_mean(torch.ones(1, 2, 3), torch.zeros(1, 2, dtype=torch.long))
    assert torch.equal(out, torch.zeros(1, 3))


def test_unknown_pooling_lists_valid_names() -> None:
    with pytest.raises(ConfigError) as err:
        get_pooling("median")
    for name in pooling_names():
        assert name in str(err.value)


def test_bad_pooling_parameter_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        get_pooling("mean", window=3)


def test_max_and_sep_pooling_on_hand_built_states() -> None:
    from searchapp.encode.pooling import get_pooling

    h = torch.tensor([[[[1.0, 5.0], [3.0, -1.0], [2.0, 2.0], [9.0, 9.0]]]])  # (1 state, 1 row, 4 tokens, d 2)
    mask = torch.tensor([[1, 1, 1, 0]])  # the 4th token is padding
    assert torch.equal(get_pooling("max")(h, mask), torch.tensor([[3.0, 5.0]]))
    assert torch.equal(get_pooling("sep")(h, mask), torch.tensor([[2.0, 2.0]]))  # the last real token
    layered = torch.stack([h[0] * 0, h[0]])  # 2 states
    for token, want in (("max", [[1.5, 2.5]]), ("sep", [[1.0, 1.0]]), ("cls", [[0.5, 2.5]])):
        got = get_pooling("layers", layers=[0, 1], token=token)(layered, mask)
        assert torch.allclose(got, torch.tensor(want)), token
