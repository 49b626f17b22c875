"""Where searchapp keeps files of its own outside any index: unpacked models, the model's exported graphs (ONNX,
OpenVINO) and cached benchmark indexes."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The cache folder: ``$SEARCHAPP_CACHE``, else ``$XDG_CACHE_HOME/searchapp``, else ``~/.cache/searchapp``
    (an XDG_CACHE_HOME that is not an absolute path is ignored, as the XDG specification says)."""
    env = os.environ.get("SEARCHAPP_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "searchapp"
