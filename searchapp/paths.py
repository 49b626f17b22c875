"""Where searchapp keeps files of its own outside any index: unpacked models and cached benchmark indexes."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The cache folder: ``$SEARCHAPP_CACHE``, else ``~/.cache/searchapp``."""
    env = os.environ.get("SEARCHAPP_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "searchapp"
