"""Index configuration: what the index was built with, saved in its database and used for every query."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from searchapp.encode.models import DEFAULT_MODEL, canonical_name
from searchapp.encode.pooling import get_pooling
from searchapp.encode.precision import check_precision
from searchapp.errors import ConfigError, EncoderMismatchError
from searchapp.ingest.splitter import SplitterConfig
from searchapp.query.fusion import Fusion

MODES = ("hybrid", "dense", "lexical")
VECTOR_INDEXES = ("auto", "flat", "ivf")
# Fusion settings stored flat in the index config under the same names (``method`` is stored as ``fusion``).
FUSION_FIELDS = tuple(f.name for f in fields(Fusion) if f.name != "method")
_FUSION = Fusion()


@dataclass(frozen=True)
class IndexConfig:
    """Settings fixed when an index is created (encoder, splitter) and ranking defaults (fusion).

    ``dimension`` is 0 until the encoder has been loaded once.
    """

    model: str = DEFAULT_MODEL
    pooling: str = "mean"
    pooling_params: dict[str, Any] = field(default_factory=dict)
    dimension: int = 0
    max_tokens: int = 256
    overlap: int = 0
    max_chars: int = 4000
    precision: str = "auto"
    # Vector index: "flat" (exact), "ivf" (approximate), or "auto" (exact below ivf_threshold vectors).
    vector_index: str = "auto"
    ivf_threshold: int = 200_000
    nprobe: int = 0  # 0: 7% of the lists, at least 32
    # Hybrid defaults: those of Fusion() (query/fusion.py), chosen in docs/evaluation.md.
    fusion: str = _FUSION.method
    norm: str = _FUSION.norm
    alpha: float = _FUSION.alpha
    rrf_k: int = _FUSION.rrf_k
    k0: int = _FUSION.k0
    alpha_question: float = _FUSION.alpha_question
    alpha_statement: float = _FUSION.alpha_statement

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", canonical_name(self.model))
        get_pooling(self.pooling, **self.pooling_params)
        _ = self.splitter  # builds (so validates) the splitter settings
        check_precision(self.precision)
        if self.vector_index not in VECTOR_INDEXES:
            raise ConfigError(f"unknown vector index '{self.vector_index}': use one of {', '.join(VECTOR_INDEXES)}")
        _ = self.fusion_settings  # and the fusion settings

    @property
    def fusion_settings(self) -> Fusion:
        """Hybrid ranking's defaults for this index."""
        return Fusion(method=self.fusion, **{name: getattr(self, name) for name in FUSION_FIELDS})

    def with_fusion(self, fusion: Fusion) -> IndexConfig:
        """A copy whose hybrid defaults are ``fusion``."""
        return replace(self, fusion=fusion.method, **{name: getattr(fusion, name) for name in FUSION_FIELDS})

    @property
    def splitter(self) -> SplitterConfig:
        """The passage splitter's settings."""
        return SplitterConfig(max_tokens=self.max_tokens, overlap=self.overlap, max_chars=self.max_chars)

    def to_settings(self) -> dict[str, str]:
        """Key -> JSON text rows for the settings table."""
        return {k: json.dumps(v, sort_keys=True) for k, v in asdict(self).items()}

    @classmethod
    def from_settings(cls, rows: dict[str, str]) -> IndexConfig:
        """Rebuild from settings rows; unknown keys (from newer versions) are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: json.loads(v) for k, v in rows.items() if k in names})

    def with_dimension(self, dimension: int) -> IndexConfig:
        """A copy with the encoder's dimension recorded."""
        return replace(self, dimension=dimension)

    def check_encoder(self, model: str | None, pooling: str | None, params: dict[str, Any] | None) -> None:
        """Refuse an encoder other than the one the index was built with (``None`` means "as built")."""
        if pooling is not None:
            get_pooling(pooling, **(params or {}))
        asked = {
            "model": canonical_name(model) if model is not None else self.model,
            "pooling": pooling if pooling is not None else self.pooling,
            "pooling_params": params if params is not None else self.pooling_params,
        }
        built = {"model": self.model, "pooling": self.pooling, "pooling_params": self.pooling_params}
        if asked != built:
            diff = ", ".join(f"{k} {built[k]!r} (asked {asked[k]!r})" for k in built if asked[k] != built[k])
            raise EncoderMismatchError(
                f"this index was built with {diff}; vectors from another encoder are not comparable: "
                "use a new --index or re-create this one"
            )


def check_mode(mode: str) -> str:
    """``mode`` if it is a ranking mode, else ``ConfigError`` listing the valid ones."""
    if mode not in MODES:
        raise ConfigError(f"unknown mode '{mode}': use one of {', '.join(MODES)}")
    return mode


def parse_params(items: list[str]) -> dict[str, Any]:
    """``["layer_start=4", "layers=-2,-1", "combine=concat"]`` -> ``{"layer_start": 4, "layers": [-2, -1], ...}``.

    Values are read as JSON where they parse (numbers, ``true``/``false``, lists), a comma makes a list, and
    anything else stays a string.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"expected KEY=VALUE, got {item!r}")
        out[key.strip()] = (
            [_scalar(v) for v in raw.split(",") if v.strip()] if "," in raw else _scalar(raw)
        )
    return out


def _scalar(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw.strip()
