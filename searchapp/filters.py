"""Search filters: which documents a query may return.

A filter is a value: this module parses and validates it. The store that runs a query compiles it to its own
query language (``store/filter_sql.py`` for SQLite) and applies it to both sides before ranking, not after: a
filtered query returns its ``k`` best matching passages even when they rank far down the unfiltered list.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from searchapp.collection import MAX_NAME_CHARS
from searchapp.errors import ConfigError
from searchapp.setting import (
    MAX_FILTER_CHARS,
    MAX_FILTER_KEY_VALUES,
    MAX_FILTER_KEYS,
    MAX_FILTER_VALUES,
    MAX_GLOB_CHARS,
    string,
    whole,
)
from searchapp.types import MAX_WHOLE

Scalar = str | int | float | bool
# The metadata keys filters accept; texts are refused keys outside it when added.
METADATA_KEY = re.compile(r"[A-Za-z0-9_.\-]+")
_BOUND = "max_length"  # where a field keeps its bound: characters of a string, keys of the metadata


@dataclass(frozen=True)
class Filter:
    """Conditions a document must meet, all of them. Its fields are the one declaration of a filter's conditions
    and their bounds: the JSON form (:meth:`parse`, the HTTP API's ``Filters``) and each store's compiler
    (``store/filter_sql.py``) take theirs from them, and every way in (Python, CLI, HTTP, MCP) is checked here.

    ``metadata``: key -> value (exact match on the document's metadata) or a list of values (any of them).
    ``path_prefix``: the document's path (or text id) starts with this string (case-sensitive).
    ``path_glob``: the document's full path (or text id) matches this glob (``*`` also matches ``/``; ``?``,
    ``[abc]``, ``[a-z]``, ``[^abc]``; case-sensitive; SQLite's ``GLOB``), e.g. ``*.md`` or ``*/guides/*``.
    ``collection``: the document is in this named collection (``searchapp ingest --collection``; collection.py).

    Bounds (``setting.py``): at most ``MAX_FILTER_KEYS`` keys, ``MAX_FILTER_KEY_VALUES`` values for a key and
    ``MAX_FILTER_VALUES`` in all; strings of at most ``MAX_FILTER_CHARS`` characters, a glob ``MAX_GLOB_CHARS``, a
    collection's name ``collection.MAX_NAME_CHARS``;
    every string Unicode text (no lone surrogate), every number one the stores hold (a whole number within 64
    bits, a finite float). Anything else is a ``ConfigError`` naming the field and the bound.
    """

    metadata: Mapping[str, Scalar | list[Scalar]] = field(default_factory=dict,
                                                           metadata={_BOUND: MAX_FILTER_KEYS})
    path_prefix: str | None = field(default=None, metadata={_BOUND: MAX_FILTER_CHARS})
    path_glob: str | None = field(default=None, metadata={_BOUND: MAX_GLOB_CHARS})
    collection: str | None = field(default=None, metadata={_BOUND: MAX_NAME_CHARS})

    def __post_init__(self) -> None:
        if not isinstance(self.metadata, Mapping):
            raise ConfigError("filters.metadata must be an object of key -> value")
        if len(self.metadata) > MAX_FILTER_KEYS:
            raise ConfigError(f"filters.metadata has {len(self.metadata)} keys, over the limit of {MAX_FILTER_KEYS}")
        total = 0
        for key, value in self.metadata.items():
            if not isinstance(key, str):
                raise ConfigError(f"filter keys must be strings, got {type(key).__name__}")
            string(f"filter key {_shown(key)}", key, MAX_FILTER_CHARS)
            if not METADATA_KEY.fullmatch(key):
                raise ConfigError(f"filter key {_shown(key)}: use letters, digits, '_', '-' and '.'")
            count = len(value) if isinstance(value, list) else 1
            if count > MAX_FILTER_KEY_VALUES:
                raise ConfigError(f"filter {key!r} has {count} values, over the limit of {MAX_FILTER_KEY_VALUES} "
                                  "for one key")
            total += count
        if total > MAX_FILTER_VALUES:
            raise ConfigError(f"filters.metadata has {total} values in all, over the limit of {MAX_FILTER_VALUES}")
        for key, value in self.metadata.items():
            values = value if isinstance(value, list) else [value]
            if not values or not all(isinstance(v, Scalar) for v in values):
                raise ConfigError(f"filter {key!r}: give a string, number or boolean, or a non-empty list of them")
            for v in values:
                _check_value(key, v)
        for name in STRING_FIELDS:
            if getattr(self, name) is not None:
                string(f"filters.{name}", getattr(self, name), MAX_LENGTH[name])

    @classmethod
    def parse(cls, value: Filter | Mapping[str, Any] | None) -> Filter | None:
        """A ``Filter`` from its JSON form ``{"metadata": {...}, "path_prefix": ..., "path_glob": ...,
        "collection": ...}``."""
        if value is None or isinstance(value, Filter):
            return value
        if not isinstance(value, Mapping):
            raise ConfigError(f"filters must be an object with keys {', '.join(FIELDS)}")
        unknown = sorted(set(value) - set(FIELDS))
        if unknown:
            raise ConfigError(f"unknown filter {', '.join(unknown)}: use {', '.join(FIELDS)}")
        metadata = value.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise ConfigError("filters.metadata must be an object of key -> value")
        return cls(dict(metadata), **{name: value.get(name) for name in STRING_FIELDS})

    @property
    def empty(self) -> bool:
        """Whether the filter lets every document through."""
        return not self.metadata and all(getattr(self, name) is None for name in STRING_FIELDS)


# A filter's conditions by name, in declaration order (its JSON form's keys), and those that are a string matched
# against a document's path or text id, or its collection (all but ``metadata``, the ones that default to none).
FIELDS = tuple(f.name for f in fields(Filter))
STRING_FIELDS = tuple(f.name for f in fields(Filter) if f.default is None)
# Each condition's bound: the most characters of a path condition, the most keys of the metadata (the HTTP form's
# ``max_length``); the bounds on values are checked with the values.
MAX_LENGTH = {f.name: int(f.metadata[_BOUND]) for f in fields(Filter)}


def _check_value(key: str, value: Scalar) -> None:
    """A metadata value a store can compare: a string of Unicode text within the bound, a whole number within
    64 bits (SQLite's integers; stored numbers beyond are floats), a finite float (none is stored)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        whole(f"filter {key!r}", value, -MAX_WHOLE - 1, MAX_WHOLE)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"filter {key!r}: {value} is not a finite number, and no stored value is another")
    elif isinstance(value, str):
        string(f"filter {key!r} value", value, MAX_FILTER_CHARS)


def _shown(key: str) -> str:
    """A key as a message shows it: its repr, at most 40 characters of it (a key may be of any length)."""
    shown = repr(key)
    return shown if len(shown) <= 40 else shown[:36] + "...'"
