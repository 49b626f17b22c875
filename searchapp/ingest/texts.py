"""Texts given to an index (``Index.add_texts``: the Python API, the HTTP API) checked before any is stored, and
made the records an ingest takes: every text of a batch is checked first, so a bad one adds nothing."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from searchapp import collection
from searchapp.errors import ConfigError
from searchapp.filters import METADATA_KEY
from searchapp.ids import check_text_id
from searchapp.ingest.pipeline import Record
from searchapp.types import NUL


def text_id(text: str) -> str:
    """The default id of an added text: the first 32 hex digits of its SHA-256, so adding it again is a no-op."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def text_records(
    texts: Sequence[str],
    ids: Sequence[str] | None = None,
    metadatas: Sequence[Mapping[str, Any]] | None = None,
    titles: Sequence[str] | None = None,
) -> list[Record]:
    """``(id, title, text, metadata)`` of each text (ids by default :func:`text_id`, titles the ids), all checked:
    ``ConfigError`` naming the first bad one (``Index.add_texts`` says what is refused)."""
    for name, value in (("texts", texts), ("ids", ids), ("metadatas", metadatas), ("titles", titles)):
        if isinstance(value, str | bytes | Mapping):
            raise ConfigError(f"{name} must be a list (one entry per text), got a {type(value).__name__}")
    if not all(isinstance(t, str) for t in texts):
        raise ConfigError("texts must be strings")
    keys = list(ids) if ids is not None else [text_id(t) for t in texts]
    metas = list(metadatas) if metadatas is not None else [{} for _ in texts]
    names = list(titles) if titles is not None else list(keys)
    if not len(keys) == len(metas) == len(names) == len(texts):
        raise ConfigError("texts, ids, metadatas and titles must have the same length")
    _check_texts(texts, keys, metas)
    _refuse_nul(texts, keys, names, metas)
    return list(zip(keys, names, texts, metas, strict=True))


def _check_texts(texts: Sequence[str], keys: Sequence[str], metas: Sequence[Mapping[str, Any]]) -> None:
    for i, (text, key, meta) in enumerate(zip(texts, keys, metas, strict=True)):
        check_text_id(key, f"text {i}")
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"text {key!r}: empty text")
        if not isinstance(meta, Mapping):
            raise ConfigError(f"text {key!r}: metadata must be a JSON object")
        try:
            json.dumps(dict(meta), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"text {key!r}: metadata is not JSON: {exc}") from exc
        for mkey, value in meta.items():
            # What filters can match, and nothing else: a key they accept, a scalar or a list of scalars.
            if not isinstance(mkey, str) or not METADATA_KEY.fullmatch(mkey):
                raise ConfigError(f"text {key!r}: metadata key {mkey!r}: use letters, digits, '_', '-' and '.'")
            values = value if isinstance(value, list) else [value]
            if not all(v is None or isinstance(v, str | int | float | bool) for v in values):
                raise ConfigError(f"text {key!r}: metadata {mkey!r}: give a string, number, boolean or null, or "
                                  "a list of them (nested objects cannot be filtered on)")
        _check_collection(key, meta)
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if list(keys).count(k) > 1)
        raise ConfigError(f"id {dup!r} is given twice")


def _check_collection(key: str, meta: Mapping[str, Any]) -> None:
    """A collection named in a text's metadata (a string under ``collection``; another value type names none) is
    named by the rule an ingest's ``--collection`` follows (``collection.check_name``): one rule however it
    arrives."""
    if isinstance(meta.get(collection.KEY), str):
        try:
            collection.check_name(meta[collection.KEY])
        except ConfigError as exc:
            raise ConfigError(f"text {key!r}: metadata {collection.KEY!r}: {exc}") from exc


def checked_record(record: Record) -> Record:
    """A record given to ``Index.ingest_records``, its id and any collection its metadata names checked."""
    key = check_text_id(record[0])
    if len(record) > 3 and isinstance(record[3], Mapping):
        _check_collection(key, record[3])
    return (key, *record[1:])  # type: ignore[return-value]


def _refuse_nul(texts: Sequence[str], keys: Sequence[str], titles: Sequence[Any],
                metas: Sequence[Mapping[str, Any]]) -> None:
    """Every text checked before any is stored: a NUL character (which PostgreSQL cannot store, and SQLite
    would) in an id, a title, a text or a metadata string refuses the whole batch, naming the first such item
    by its position, on every backend alike (docs/reliability.md)."""
    for i, (text, key, title, meta) in enumerate(zip(texts, keys, titles, metas, strict=True)):
        if not isinstance(title, str):
            raise ConfigError(f"text {i} (id {key!r}): the title must be a string")
        strings = [v for value in meta.values() for v in (value if isinstance(value, list) else [value])
                   if isinstance(v, str)]
        for part, values in (("id", [key]), ("title", [title]), ("text", [text]), ("metadata", strings)):
            if any(NUL in v for v in values):
                raise ConfigError(f"text {i} (id {key!r}): its {part} holds a NUL character (\\x00), which no "
                                  "backend stores: nothing of this batch was added")
