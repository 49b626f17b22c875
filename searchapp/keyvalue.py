"""The one ``KEY=VALUE`` parser, for pooling parameters and metadata filters given on a command line.

A value is read as JSON where it parses (numbers, ``true``/``false``, quoted strings, lists) and is a plain
string otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from searchapp.errors import ConfigError


def parse_value(raw: str) -> Any:
    """``raw`` as JSON if it parses, else the string with surrounding spaces removed."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw.strip()


def split_pair(item: str, what: str = "parameter") -> tuple[str, str]:
    """``"key=value"`` -> ``("key", "value")``; ``ConfigError`` naming ``what`` without an ``=`` or a key."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"{what} {item!r}: use KEY=VALUE")
    return key.strip(), raw


def parse_params(items: Iterable[str]) -> dict[str, Any]:
    """``["layer_start=4", "layers=-2,-1", "combine=concat"]`` -> ``{"layer_start": 4, "layers": [-2, -1], ...}``:
    a comma makes a list; a repeated key keeps the last value."""
    out: dict[str, Any] = {}
    for item in items:
        key, raw = split_pair(item, "pooling parameter")
        out[key] = [parse_value(v) for v in raw.split(",") if v.strip()] if "," in raw else parse_value(raw)
    return out


def parse_choices(items: Iterable[str], what: str = "--filter") -> dict[str, Any]:
    """``["lang=en", "lang=fr", "year=2024"]`` -> ``{"lang": ["en", "fr"], "year": 2024}``: a repeated key
    collects its values into a list (any of them matches)."""
    out: dict[str, Any] = {}
    for item in items:
        key, raw = split_pair(item, what)
        value = parse_value(raw)
        if key in out:
            previous = out[key] if isinstance(out[key], list) else [out[key]]
            value = previous + (value if isinstance(value, list) else [value])
        out[key] = value
    return out
