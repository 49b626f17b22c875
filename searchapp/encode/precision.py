"""Numeric precision of the forward pass: fp32, or bf16 where the CPU runs it natively and faster.

``auto`` never assumes: it asks oneDNN whether the CPU has native bf16 and then times a small matmul of the
model's shape in both precisions, picking bf16 only when it is clearly faster. The answer is cached per process.
"""

from __future__ import annotations

import time
from functools import lru_cache

from searchapp.errors import ConfigError

PRECISIONS = ("auto", "fp32", "bf16")
# bf16 must beat fp32 by this factor to be chosen automatically: a CPU that emulates it is slower, not equal.
_MIN_SPEEDUP = 1.2


def check_precision(name: str) -> str:
    """``name`` if valid, else ``ConfigError`` listing the valid ones."""
    if name not in PRECISIONS:
        raise ConfigError(f"unknown precision '{name}': use one of {', '.join(PRECISIONS)}")
    return name


@lru_cache(maxsize=1)
def bf16_native_and_faster() -> bool:
    """True when this CPU has native bf16 (oneDNN says so) and a model-shaped matmul runs faster in it."""
    import torch

    probe = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    if probe is None or not torch.backends.mkldnn.is_available() or not probe():
        return False
    x = torch.randn(512, 384)
    w = torch.randn(1536, 384)

    def timed(bf16: bool) -> float:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                torch.nn.functional.linear(x, w)
            best = min(best, time.perf_counter() - start)
        return best

    timed(False), timed(True)  # warm-up: first calls pay for kernel selection
    return timed(True) * _MIN_SPEEDUP < timed(False)


def resolve(name: str) -> str:
    """``fp32`` or ``bf16`` for a configured precision."""
    check_precision(name)
    if name == "auto":
        return "bf16" if bf16_native_and_faster() else "fp32"
    return name
