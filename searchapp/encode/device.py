"""Where the forward pass runs: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``, declared, parsed and resolved here once.

``auto`` is a GPU where this process can use one, else the CPU. Whether a GPU is there is asked of torch only
where the machine shows an NVIDIA driver (``/proc/driver/nvidia/gpus``) and ``CUDA_VISIBLE_DEVICES`` hides
none of it: a CPU-only machine (and a query process, which embeds through ONNX Runtime) never imports torch to
learn that it has no GPU.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from searchapp.errors import DeviceError

DEVICES = ("auto", "cpu", "cuda", "cuda:N")
_SYNTAX = re.compile(r"auto|cpu|cuda(?::(0|[1-9][0-9]{0,3}))?")
NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")


def check_device(name: object) -> str:
    """``name`` if it is a device string, else ``DeviceError`` listing the forms."""
    if not isinstance(name, str) or not _SYNTAX.fullmatch(name):
        raise DeviceError(f"unknown device {name!r}: use one of {', '.join(DEVICES)} (N a GPU number, from 0)")
    return name


def usable(name: object) -> str:
    """``name`` validated, and a GPU it names checked to be there (``cuda`` resolved to ``cuda:0``); ``auto`` stays
    ``auto`` (resolved where the model loads, so a process that never embeds never asks torch)."""
    return resolve_device(name) if check_device(name).startswith("cuda") else name  # type: ignore[arg-type]


def device_class(name: str) -> str:
    """``cpu`` or ``cuda`` for a device string (``auto`` resolved here)."""
    return resolve_device(name).partition(":")[0]


def _driver_shows_gpu() -> bool:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    try:
        return any(NVIDIA_GPUS.iterdir())
    except OSError:
        return False


def cuda_count() -> int:
    """GPUs torch can use in this process (0 without CUDA, without a driver, or a CPU-only torch)."""
    if "torch" not in sys.modules and not _driver_shows_gpu():
        return 0
    import torch

    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def resolve_device(name: str) -> str:
    """The device the forward pass runs on: ``cpu`` or ``cuda:N``.

    ``auto`` is ``cuda:0`` where a GPU is usable, else ``cpu``; ``cuda`` is ``cuda:0``. ``DeviceError`` for a
    malformed string, for ``cuda`` where no GPU is usable, and for a GPU number this machine does not have.
    """
    check_device(name)
    if name == "cpu":
        return "cpu"
    count = cuda_count()
    if name == "auto":
        return "cuda:0" if count else "cpu"
    number = int(name.partition(":")[2] or 0)
    if count == 0:
        raise DeviceError(f"device {name}: no CUDA GPU is usable here (no NVIDIA driver, a CPU-only torch, or "
                          "CUDA_VISIBLE_DEVICES hides them): use --device cpu or auto")
    if number >= count:
        raise DeviceError(f"device {name}: this machine has {count} CUDA GPU{'s' if count > 1 else ''} "
                          f"(cuda:0..cuda:{count - 1})")
    return f"cuda:{number}"
