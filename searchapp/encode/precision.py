"""Numeric precision of the forward pass: fp32, bf16 where the CPU has native bf16 arithmetic, int8 (the ONNX
graph quantised) on other x86 CPUs with AVX2; on a CUDA GPU bf16 where the GPU supports it, else fp16.

``auto`` is decided from the CPU's capabilities, never from timing: the same machine always gets the same answer
(a timing probe flipped between runs under load, so one machine embedded queries and documents differently).
bf16 is chosen where the CPU has bf16 dot-product instructions (``avx512_bf16`` or ``amx_bf16``): there it is
the fastest CPU path at fp32's retrieval quality (docs/performance.md, "Precision: bf16 leaves retrieval quality
unchanged" and "Every CPU path in one run"). A CPU without them would emulate bf16, slower than fp32: where it
has AVX2 (most laptops and cloud CPUs) ``auto`` is int8, faster than fp32 at dense nDCG@10 within 0.005 of fp32
on the visible splits (docs/performance.md, "Int8 on CPUs without bf16"); any other CPU, or one whose flags
cannot be read (not Linux), gets fp32.

``SEARCHAPP_CPU_FLAGS`` (space-separated flag names) stands in for the machine's flags: the test suite runs with
the flags it gives (``pytest --cpu-flags``), never the machine's own, and a user can ask for the choice another
CPU class would get.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from searchapp.errors import ConfigError

PRECISIONS = ("auto", "fp32", "bf16", "fp16", "int8")
# fp16 autocast is a GPU's: on a CPU it is emulated, slower than fp32. int8 is the ONNX graph quantised
# (encode/onnx_encoder.py), a CPU's only.
CPU_PRECISIONS = ("fp32", "bf16", "int8")
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
# Where ``auto`` embeds passages in int8 when the CPU lacks bf16: x86 CPUs with AVX2, whose integer
# multiply-adds ONNX Runtime's int8 kernels use (docs/performance.md, "Int8 on CPUs without bf16").
INT8_FLAGS = frozenset({"avx2"})
CPUINFO = Path("/proc/cpuinfo")
CPU_FLAGS_ENV = "SEARCHAPP_CPU_FLAGS"


def check_precision(name: str) -> str:
    """``name`` if valid, else ``ConfigError`` listing the valid ones."""
    if name not in PRECISIONS:
        raise ConfigError(f"unknown precision '{name}': use one of {', '.join(PRECISIONS)}")
    return name


def cpu_flags() -> frozenset[str]:
    """The instruction-set flags of this machine's first CPU (empty where ``/proc/cpuinfo`` cannot be read), or
    those ``SEARCHAPP_CPU_FLAGS`` names where it is set."""
    given = os.environ.get(CPU_FLAGS_ENV)
    if given is not None:
        return frozenset(given.split())
    try:
        with CPUINFO.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


@lru_cache(maxsize=1)
def native_bf16() -> bool:
    """True when this CPU has bf16 dot-product instructions."""
    return bool(NATIVE_BF16_FLAGS & cpu_flags())


def int8_preferred() -> bool:
    """True when ``auto`` embeds in int8 on this CPU: no bf16 instructions, and the integer ones int8 needs."""
    return not native_bf16() and bool(INT8_FLAGS & cpu_flags())


def resolve(name: str, device: str = "cpu") -> str:
    """``fp32``, ``bf16``, ``fp16`` or ``int8`` for a configured precision on ``device`` (``cpu`` or
    ``cuda[:N]``).

    ``auto`` on a CPU: bf16 where it has bf16 instructions, else int8 where it has AVX2, else fp32 (a pooling the
    int8 graph cannot run keeps fp32: encode/spec.py); on a GPU: bf16 where it supports it (Ampere and later),
    else fp16. ``ConfigError`` for fp16 on a CPU and int8 on a GPU.
    """
    check_precision(name)
    cuda = device.startswith("cuda")
    if name == "auto":
        if cuda:
            import torch

            return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
        return "bf16" if native_bf16() else "int8" if int8_preferred() else "fp32"
    if cuda and name == "int8":
        raise ConfigError("precision int8 runs on the CPU only (the quantised ONNX graph): use fp32, bf16, fp16 or "
                          "auto on a GPU")
    if not cuda and name not in CPU_PRECISIONS:
        raise ConfigError(f"precision {name} runs on a CUDA GPU only: use {', '.join(CPU_PRECISIONS)} or auto on "
                          "the CPU")
    return name
