"""Pooling strategies: pure functions of (hidden states of all layers, attention mask) -> sentence vectors.

Each strategy is registered by name; ``get_pooling("name", **params)`` returns it bound to its parameters and an
unknown name raises ``ConfigError`` listing the valid ones. Shapes: ``hidden_states`` float32 ``(L + 1, B, T, d)``,
``mask`` ``(B, T)`` with 1 for real tokens; the result is float32 ``(B, d)``, not normalised.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from searchapp.errors import ConfigError

if TYPE_CHECKING:
    import torch

# Torch is only touched inside the functions, so the registry (names, parameter checks) is usable without it.
PoolingFn = Callable[["torch.Tensor", "torch.Tensor"], "torch.Tensor"]
_REGISTRY: dict[str, Callable[..., torch.Tensor]] = {}
# Poolings that read only ``hidden_states[-1]``: the encoder may hand them the last layer alone, ``(1, B, T, d)``,
# sparing the forward pass the copy of every layer.
_LAST_LAYER_ONLY: set[str] = set()


def register(
    name: str, last_layer_only: bool = False
) -> Callable[[Callable[..., torch.Tensor]], Callable[..., torch.Tensor]]:
    """Add a pooling function under ``name``; ``last_layer_only`` if it reads nothing but ``hidden_states[-1]``."""

    def deco(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        _REGISTRY[name] = fn
        if last_layer_only:
            _LAST_LAYER_ONLY.add(name)
        return fn

    return deco


def last_layer_only(name: str) -> bool:
    """Whether pooling ``name`` reads only the last layer's states."""
    return name in _LAST_LAYER_ONLY


def get_pooling(name: str, **params: Any) -> PoolingFn:
    """The pooling function ``name`` with ``params`` bound."""
    if name not in _REGISTRY:
        raise ConfigError(f"unknown pooling '{name}': use one of {', '.join(sorted(_REGISTRY))}")
    fn = _REGISTRY[name]
    try:
        inspect.signature(fn).bind(None, None, **params)
    except TypeError as exc:
        raise ConfigError(f"bad parameters for pooling '{name}': {exc}") from exc
    return partial(_checked, partial(fn, **params), name)


def _checked(fn: PoolingFn, name: str, hidden_states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    # Parameter values can only be checked against a model's depth: report them as configuration errors.
    try:
        return fn(hidden_states, mask)
    except (ValueError, TypeError) as exc:  # TypeError: a parameter of the wrong type, e.g. layers=-2
        raise ConfigError(f"pooling '{name}': {exc}") from exc


def pooling_names() -> list[str]:
    """Registered pooling names."""
    return sorted(_REGISTRY)


def masked_mean(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over real tokens: ``states`` ``(B, T, d)``, ``mask`` ``(B, T)`` -> ``(B, d)``; zero for an empty row."""
    m = mask.to(states.dtype).unsqueeze(-1)
    return (states * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)


@register("mean", last_layer_only=True)
def mean_pooling(hidden_states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of the last layer's token states over real tokens (special tokens included, as the model was
    trained)."""
    return masked_mean(hidden_states[-1], mask)


@register("cls", last_layer_only=True)
def cls_pooling(hidden_states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The last layer's state of the first token ([CLS])."""
    return hidden_states[-1][:, 0, :]


def masked_max(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Element-wise max over real tokens: ``states`` ``(B, T, d)``, ``mask`` ``(B, T)`` -> ``(B, d)``."""
    return states.masked_fill(mask.unsqueeze(-1) == 0, float("-inf")).amax(dim=1)


def last_token(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The state of each row's last real token ([SEP] for BERT-style inputs): ``(B, T, d)`` -> ``(B, d)``."""
    import torch

    last = (mask.sum(dim=1) - 1).clamp_min(0)
    return states[torch.arange(states.shape[0], device=states.device), last]


@register("max", last_layer_only=True)
def max_pooling(hidden_states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Element-wise max of the last layer's token states over real tokens (one of Ma et al.'s poolings)."""
    return masked_max(hidden_states[-1], mask)


@register("sep", last_layer_only=True)
def sep_pooling(hidden_states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The last layer's state of the last real token ([SEP]; one of Ma et al.'s poolings)."""
    return last_token(hidden_states[-1], mask)


# Token poolings of one layer's states, by name (the ``token`` parameter of ``layers``).
_TOKEN_POOLINGS = {
    "mean": masked_mean,
    "max": masked_max,
    "cls": lambda states, mask: states[:, 0, :],
    "sep": last_token,
}


def _layer_indices(layers: object, n_states: int) -> list[int]:
    """Resolve ``layers`` (ints, negative from the top) against ``n_states`` hidden states."""
    if not isinstance(layers, list | tuple) or not layers or not all(isinstance(i, int) for i in layers):
        raise ValueError(f"layers must be a non-empty list of integers (e.g. layers=-2,-1), got {layers!r}")
    out = [i + n_states if i < 0 else i for i in layers]
    if not all(0 <= i < n_states for i in out):
        raise ValueError(f"layers {list(layers)} are outside the model's {n_states} hidden states")
    return out


@register("layers")
def fused_layers(
    hidden_states: torch.Tensor,
    mask: torch.Tensor,
    layers: list[int] | tuple[int, ...] = (-4, -3, -2, -1),
    combine: str = "mean",
    token: str = "mean",
) -> torch.Tensor:
    """Selected fused layers (Ma et al. 2019): combine the chosen layers' token states, then pool tokens.

    ``layers`` index ``hidden_states`` (0 = embeddings, negative from the top); ``combine`` is ``mean`` (output
    ``(B, d)``) or ``concat`` (``(B, d * len(layers))``); ``token`` is ``mean`` or ``max`` (over real tokens),
    ``cls`` or ``sep`` (the first or last real token).
    """
    idx = _layer_indices(layers, hidden_states.shape[0])
    chosen = hidden_states[idx]  # (k, B, T, d)
    if combine == "mean":
        fused = chosen.mean(dim=0)
    elif combine == "concat":
        fused = chosen.permute(1, 2, 0, 3).reshape(*chosen.shape[1:3], -1)
    else:
        raise ValueError(f"combine must be 'mean' or 'concat', got {combine!r}")
    if token not in _TOKEN_POOLINGS:
        raise ValueError(f"token must be one of {', '.join(_TOKEN_POOLINGS)}, got {token!r}")
    return _TOKEN_POOLINGS[token](fused, mask)


# SBERT-WK's published setting, for 12-layer BERT-base: layers 4..12 (9 of them) with a window of 2. The default
# scales it to the model's depth (all-MiniLM-L6-v2, 6 layers: layers 2..6, window 1).
PAPER_LAYERS, PAPER_START, PAPER_WINDOW = 12, 4, 2
# Fewer layers than this and SBERT-WK is not itself: with two, each token has one adjacent-layer cosine, so its
# variance (the token weight) is 0 for every token, and the two layers always weigh 0.5 each (docs/pooling.md).
MIN_WK_LAYERS = 3


def sbert_wk_setting(n_states: int, layer_start: int | None, window: int | None) -> tuple[int, int]:
    """``(layer_start, window)`` for a model with ``n_states`` hidden states (layers + embeddings): the given
    values, or the paper's scaled to the model's depth. ``ValueError`` for a setting under which SBERT-WK's
    weightings cannot act (fewer than ``MIN_WK_LAYERS`` layers)."""
    depth = n_states - 1
    start = round(PAPER_START * depth / PAPER_LAYERS) if layer_start is None else layer_start
    m = max(1, round(PAPER_WINDOW * depth / PAPER_LAYERS)) if window is None else window
    first = start + n_states if start < 0 else start
    if 0 <= first < n_states and n_states - first < MIN_WK_LAYERS:
        raise ValueError(
            f"layer_start {start} leaves {n_states - first} layer(s): SBERT-WK needs at least {MIN_WK_LAYERS} for "
            f"its weightings to act (with fewer every token weighs the same and the layers split evenly: that is "
            f"`layers` pooling); use layer_start <= {n_states - MIN_WK_LAYERS}"
        )
    return start, m


@register("sbert-wk")
def sbert_wk_pooling(
    hidden_states: torch.Tensor,
    mask: torch.Tensor,
    layer_start: int | None = None,
    window: int | None = None,
    clip_left: bool = False,
    word_vectors: str = "fused",
) -> torch.Tensor:
    """SBERT-WK (Wang & Kuo 2020); see :mod:`searchapp.encode.sbert_wk` and docs/pooling.md.

    Defaults: the paper's setting (``layer_start=4, window=2`` on 12 layers) scaled to the model's depth;
    settings that leave fewer than three layers are refused (the method's weightings cannot act there).
    """
    from searchapp.encode.sbert_wk import sbert_wk

    start, m = sbert_wk_setting(hidden_states.shape[0], layer_start, window)
    return sbert_wk(hidden_states, mask, layer_start=start, window=m, clip_left=clip_left, word_vectors=word_vectors)
