"""Search filters: which documents a query may return, as SQL over the ``documents`` table.

A filter restricts both sides of a search before ranking, not after it: the lexical side adds the condition to
its FTS5 query and the dense side searches FAISS with the matching passage ids as a selector, so a filtered
query returns its ``k`` best matching passages even when they rank far down the unfiltered list.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from searchapp.errors import ConfigError

Scalar = str | int | float | bool
_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")
_FIELDS = ("metadata", "path_prefix", "path_glob")


@dataclass(frozen=True)
class Filter:
    """Conditions a document must meet, all of them.

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
            if not isinstance(key, str) or not _KEY.match(key):
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
            raise ConfigError(f"filters must be an object with keys {', '.join(_FIELDS)}")
        unknown = sorted(set(value) - set(_FIELDS))
        if unknown:
            raise ConfigError(f"unknown filter {', '.join(unknown)}: use {', '.join(_FIELDS)}")
        metadata = value.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise ConfigError("filters.metadata must be an object of key -> value")
        for name in ("path_prefix", "path_glob"):
            if value.get(name) is not None and not isinstance(value[name], str):
                raise ConfigError(f"filters.{name} must be a string")
        return cls(dict(metadata), value.get("path_prefix"), value.get("path_glob"))

    @property
    def empty(self) -> bool:
        """Whether the filter lets every document through."""
        return not self.metadata and self.path_prefix is None and self.path_glob is None

    def where(self, docs: str = "d") -> tuple[str, dict[str, Any]]:
        """A SQL condition over the documents table aliased ``docs``, and its bound parameters."""
        clauses: list[str] = []
        params: dict[str, Any] = {}
        for n, (key, value) in enumerate(sorted(self.metadata.items())):
            values = value if isinstance(value, list) else [value]
            params[f"fk{n}"] = f'$."{key}"'
            path = f"{docs}.metadata, :fk{n}"
            options = []
            for m, v in enumerate(values):
                # json_extract gives JSON true/false as 1/0, so booleans and numbers are told apart by json_type.
                if isinstance(v, bool):
                    options.append(f"json_type({path}) = '{'true' if v else 'false'}'")
                    continue
                params[f"f{n}_{m}"] = v
                if isinstance(v, str):  # a SQL text never equals a number: no type check needed
                    options.append(f"json_extract({path}) = :f{n}_{m}")
                else:
                    options.append(f"(json_type({path}) IN ('integer', 'real') AND json_extract({path}) = :f{n}_{m})")
            clauses.append("(" + " OR ".join(options) + ")")
        if self.path_prefix is not None:
            params["fprefix"] = self.path_prefix
            clauses.append(f"substr({docs}.path, 1, length(:fprefix)) = :fprefix")
        if self.path_glob is not None:
            params["fglob"] = self.path_glob
            clauses.append(f"{docs}.path GLOB :fglob")
        return " AND ".join(clauses) or "1", params

    def passages_sql(self) -> tuple[str, dict[str, Any]]:
        """A SELECT of the ids of the passages this filter lets through, and its parameters."""
        cond, params = self.where()
        return f"SELECT p.id FROM passages p JOIN documents d ON d.id = p.document_id WHERE {cond}", params
