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


def register(name: str) -> Callable[[Callable[..., torch.Tensor]], Callable[..., torch.Tensor]]:
    """Add a pooling function under ``name``."""

    def deco(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        _REGISTRY[name] = fn
        return fn

    return deco


def get_pooling(name: str, **params: Any) -> PoolingFn:
    """The pooling function ``name`` with ``params`` bound."""
    if name not in _REGISTRY:
        raise ConfigError(f"unknown pooling '{name}': use one of {', '.join(sorted(_REGISTRY))}")
    fn = _REGISTRY[name]
    try:
        inspect.signature(fn).bind(None, None, **params)
    except TypeError as exc:
        raise ConfigError(f"bad parameters for pooling '{name}': {exc}") from exc
    return partial(fn, **params)


def pooling_names() -> list[str]:
    """Registered pooling names."""
    return sorted(_REGISTRY)


def masked_mean(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over real tokens: ``states`` ``(B, T, d)``, ``mask`` ``(B, T)`` -> ``(B, d)``; zero for an empty row."""
    m = mask.to(states.dtype).unsqueeze(-1)
    return (states * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)


@register("mean")
def mean_pooling(hidden_states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of the last layer's token states over real tokens (special tokens included, as the model was
    trained)."""
    return masked_mean(hidden_states[-1], mask)


@register("cls")
def cls_pooling(hidden_states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The last layer's state of the first token ([CLS])."""
    return hidden_states[-1][:, 0, :]
