"""Search filters: which documents a query may return.

A filter is a value: this module parses and validates it. The store that runs a query compiles it to its own
query language (``store/filter_sql.py`` for SQLite) and applies it to both sides before ranking, not after: a
filtered query returns its ``k`` best matching passages even when they rank far down the unfiltered list.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from searchapp.errors import ConfigError

Scalar = str | int | float | bool
# The metadata keys filters accept; texts are refused keys outside it when added.
METADATA_KEY = re.compile(r"[A-Za-z0-9_.\-]+")


@dataclass(frozen=True)
class Filter:
    """Conditions a document must meet, all of them. Its fields are the one declaration of a filter's conditions:
    the JSON form (:meth:`parse`, the HTTP API's ``Filters``) and each store's compiler (``store/filter_sql.py``)
    take theirs from them.

    ``metadata``: key -> value (exact match on the document's metadata) or a list of values (any of them).
    ``path_prefix``: the document's path (or text id) starts with this string (case-sensitive).
    ``path_glob``: the document's full path (or text id) matches this glob (``*`` also matches ``/``; ``?``,
    ``[abc]``; case-sensitive), e.g. ``*.md`` or ``*/guides/*``.
    """

    metadata: Mapping[str, Scalar | list[Scalar]] = field(default_factory=dict)
    path_prefix: str | None = None
    path_glob: str | None = None

    def __post_init__(self) -> None:
        for key, value in self.metadata.items():
            if not isinstance(key, str) or not METADATA_KEY.fullmatch(key):
                raise ConfigError(f"filter key {key!r}: use letters, digits, '_', '-' and '.'")
            values = value if isinstance(value, list) else [value]
            if not values or not all(isinstance(v, Scalar) for v in values):
                raise ConfigError(f"filter {key!r}: give a string, number or boolean, or a non-empty list of them")

    @classmethod
    def parse(cls, value: Filter | Mapping[str, Any] | None) -> Filter | None:
        """A ``Filter`` from its JSON form ``{"metadata": {...}, "path_prefix": ..., "path_glob": ...}``."""
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
        for name in PATH_FIELDS:
            if value.get(name) is not None and not isinstance(value[name], str):
                raise ConfigError(f"filters.{name} must be a string")
        return cls(dict(metadata), **{name: value.get(name) for name in PATH_FIELDS})

    @property
    def empty(self) -> bool:
        """Whether the filter lets every document through."""
        return not self.metadata and all(getattr(self, name) is None for name in PATH_FIELDS)


# A filter's conditions by name, in declaration order (its JSON form's keys), and those that are a string matched
# against a document's path or text id (all but ``metadata``, the ones that default to none).
FIELDS = tuple(f.name for f in fields(Filter))
PATH_FIELDS = tuple(f.name for f in fields(Filter) if f.default is None)
