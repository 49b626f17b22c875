"""A cache folder made once for a test module or session, holding what a converter writes there (an exported
ONNX graph, an OpenVINO model), so that tests with a home of their own each do not convert the model again."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest


def filled_cache(factory: pytest.TempPathFactory, name: str, fill: Callable[[], object]) -> Path:
    """A new cache folder with ``fill()`` run against it (``SEARCHAPP_CACHE`` pointing there meanwhile)."""
    cache = factory.mktemp(name)
    old = os.environ.get("SEARCHAPP_CACHE")
    os.environ["SEARCHAPP_CACHE"] = str(cache)
    try:
        fill()
    finally:
        if old is None:
            del os.environ["SEARCHAPP_CACHE"]
        else:
            os.environ["SEARCHAPP_CACHE"] = old
    return cache
