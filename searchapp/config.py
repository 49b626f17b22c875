"""Index configuration: what the index was built with, saved in its database and used for every query."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from searchapp.encode.catalog import DEFAULT_MODEL, canonical_name
from searchapp.encode.pooling import get_pooling
from searchapp.encode.precision import check_precision
from searchapp.errors import ConfigError, EncoderMismatchError
from searchapp.ingest.sections import PASSAGE_CONTEXTS
from searchapp.ingest.splitter import SplitterConfig
from searchapp.query.fusion import Fusion
from searchapp.store.vector_policy import VectorPolicy

# Nested settings are stored, shown by ``status`` and given to ``open_or_create`` under flat names: a field's own
# name, except where it would be ambiguous (fusion's method is "fusion").
_SECTIONS: dict[str, type] = {"splitter": SplitterConfig, "fusion": Fusion}
_RENAMED = {("fusion", "method"): "fusion"}
# What an index made before a setting existed did, where that is not the setting's default now.
_BEFORE_SETTING: dict[str, Any] = {"passage_context": "none"}
# The settings that name the encoder: another one makes vectors incomparable (EncoderMismatchError).
_ENCODER_SETTINGS = ("model", "pooling", "pooling_params")
# Settings that may differ from run to run without making vectors incomparable (bf16 and fp32 vectors of the
# same model agree to a cosine of 0.9999): given for an existing index, they apply to this process only.
RUNTIME_SETTINGS = ("precision",)


@dataclass(frozen=True)
class IndexConfig:
    """Settings fixed when an index is created (encoder, splitter) and ranking defaults (fusion).

    ``dimension`` is 0 until the encoder has been loaded once. ``splitter`` and ``fusion`` are nested; their
    fields also go by flat names (:func:`flat_names`, e.g. ``max_tokens``, ``alpha``) in the settings table,
    ``status`` and :meth:`from_flat`.
    """

    model: str = DEFAULT_MODEL
    pooling: str = "mean"
    pooling_params: dict[str, Any] = field(default_factory=dict)
    dimension: int = 0
    precision: str = "auto"
    # Vector index: "flat" (exact), "ivf" (approximate), or "auto" (exact below ivf_threshold vectors). None: the
    # backend's own threshold (store/vector_policy.DEFAULT_THRESHOLDS), recorded as a number when the index is made.
    vector_index: str = "auto"
    ivf_threshold: int | None = None
    nprobe: int = 0  # 0: vector_policy.auto_nprobe (64 lists, or 1.6% of them above 4,000)
    splitter: SplitterConfig = field(default_factory=SplitterConfig)
    # What the encoder sees of a passage: "section" puts its section path (its headings) on a line before it
    # (ingest/sections.py; chosen in docs/evaluation.md), "none" the passage alone. Indexes made before the
    # setting existed embedded passages alone (from_settings).
    passage_context: str = "section"
    # Hybrid defaults: those of Fusion() (query/fusion.py), chosen in docs/evaluation.md.
    fusion: Fusion = field(default_factory=Fusion)

    def __post_init__(self) -> None:
        for section, kind in _SECTIONS.items():
            if not isinstance(getattr(self, section), kind):
                raise ConfigError(
                    f"IndexConfig.{section} must be a {kind.__name__}; flat settings such as max_tokens or alpha go "
                    "through IndexConfig.from_flat(...)"
                )
        object.__setattr__(self, "model", canonical_name(self.model))
        get_pooling(self.pooling, **self.pooling_params)
        check_precision(self.precision)
        if self.passage_context not in PASSAGE_CONTEXTS:
            raise ConfigError(f"unknown passage_context {self.passage_context!r}: use one of "
                              f"{', '.join(PASSAGE_CONTEXTS)}")
        self.vectors  # noqa: B018 - builds (so validates) the vector index policy

    @property
    def vectors(self) -> VectorPolicy:
        """When the vector index is exact and when approximate, and how it is searched."""
        return VectorPolicy(self.vector_index, self.ivf_threshold, self.nprobe)

    def with_fusion(self, fusion: Fusion) -> IndexConfig:
        """A copy whose hybrid defaults are ``fusion``."""
        return replace(self, fusion=fusion)

    def with_vectors(self, policy: VectorPolicy) -> IndexConfig:
        """A copy with ``policy``'s threshold recorded (the backend's, where this config named none)."""
        return replace(self, ivf_threshold=policy.threshold)

    def with_dimension(self, dimension: int) -> IndexConfig:
        """A copy with the encoder's dimension recorded."""
        return replace(self, dimension=dimension)

    def to_flat(self) -> dict[str, Any]:
        """Every setting under its flat name."""
        out: dict[str, Any] = {}
        for name, (section, attr) in flat_names().items():
            out[name] = getattr(getattr(self, section), attr) if section else getattr(self, attr)
        return out

    @classmethod
    def from_flat(cls, **flat: Any) -> IndexConfig:
        """Build from flat names (``max_tokens=128, alpha=0.7``); ``ConfigError`` on an unknown name."""
        check_names(flat)
        names = flat_names()
        top: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {section: {} for section in _SECTIONS}
        for name, value in flat.items():
            section, attr = names[name]
            (nested[section] if section else top)[attr] = value
        sections = {section: kind(**nested[section]) for section, kind in _SECTIONS.items()}
        return cls(**top, **sections)

    def to_settings(self) -> dict[str, str]:
        """Key -> JSON text rows for the settings table."""
        return {k: json.dumps(v, sort_keys=True) for k, v in self.to_flat().items()}

    @classmethod
    def from_settings(cls, rows: dict[str, str]) -> IndexConfig:
        """Rebuild from settings rows; unknown keys (from newer versions) are ignored."""
        names = flat_names()
        given = {k: json.loads(v) for k, v in rows.items() if k in names}
        for key, value in _BEFORE_SETTING.items():
            given.setdefault(key, value)
        return cls.from_flat(**given)

    def check_same(self, asked: IndexConfig) -> None:
        """Refuse ``asked`` (``Index(config=...)`` for an existing index) where it names another encoder
        (``EncoderMismatchError``) or splitter (``ConfigError``) than this index's."""
        self.check_encoder(asked.model, asked.pooling, asked.pooling_params)
        if asked.splitter != self.splitter:
            raise ConfigError(f"this index splits passages with {self.splitter}; asked {asked.splitter}")

    def check_asked(self, flat: Mapping[str, Any]) -> None:
        """Refuse settings asked by their flat names (``Index.open_or_create`` of an existing index) that differ
        from this index's: another encoder (``EncoderMismatchError``) or any other setting (``ConfigError``)."""
        self.check_encoder(flat.get("model"), flat.get("pooling"), flat.get("pooling_params"))
        built = self.to_flat()
        differ = [k for k, v in flat.items() if k not in _ENCODER_SETTINGS and built[k] != v]
        if differ:
            raise ConfigError(
                "this index was built with " + ", ".join(f"{k}={built[k]!r} (asked {flat[k]!r})" for k in differ)
            )

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


def check_names(flat: Mapping[str, Any]) -> None:
    """``ConfigError`` naming the settings in ``flat`` that have no flat name, and the names there are."""
    names = flat_names()
    unknown = sorted(set(flat) - set(names))
    if unknown:
        raise ConfigError(f"unknown setting {', '.join(unknown)}: use {', '.join(sorted(names))}")


def flat_names() -> dict[str, tuple[str | None, str]]:
    """Flat setting name -> (nested section or ``None``, field name), for every setting of ``IndexConfig``."""
    out: dict[str, tuple[str | None, str]] = {}
    for f in fields(IndexConfig):
        if f.name in _SECTIONS:
            for sub in fields(_SECTIONS[f.name]):
                out[_RENAMED.get((f.name, sub.name), sub.name)] = (f.name, sub.name)
        else:
            out[f.name] = (None, f.name)
    return out
