"""Paths: where searchapp keeps files of its own outside any index (unpacked models, the model's exported graphs,
ONNX and OpenVINO, and cached benchmark indexes), and the key an index gives a file's path (:func:`own_path`)."""

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


def own_path(path: str) -> str:
    """``path`` (absolute) with its folders' links resolved but not its own: where a walk of a folder holding it
    finds it (walks list real folders and do not follow links to folders; a link to a file is indexed under the
    link's own path, never its target's)."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
