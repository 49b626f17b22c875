"""Named collections: which folder a document was ingested from, under a name an agent can choose by.

A collection is stored without a table of its own: each document of one holds its name under the metadata key
``collection`` (``KEY``; the metadata filter and the ``collection`` filter both match it, on every backend), and
its description is a settings row ``collection:NAME`` (``setting_rows``; rows the index's configuration does not
know are left alone by it). An index whose documents hold no such key has no collections and behaves as before.
A text added through the API joins a collection by giving the key in its metadata.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from searchapp.errors import ConfigError
from searchapp.setting import string

KEY = "collection"  # the document metadata key holding its collection's name
_ROW = "collection:"  # the settings rows holding the descriptions, by name
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 2000


def check_name(name: object) -> str:
    """``name`` if it can name a collection (letters, digits, ``_``, ``-``, ``.``, not first; at most
    ``MAX_NAME_CHARS``), else ``ConfigError`` saying why."""
    name = string("collection name", name, MAX_NAME_CHARS)
    if not NAME.fullmatch(name):
        raise ConfigError(f"collection name {name!r}: use letters, digits, '_', '-' and '.' (a letter or digit first)")
    return name


def check_description(text: object) -> str:
    """``text`` if it can describe a collection (Unicode text of at most ``MAX_DESCRIPTION_CHARS``)."""
    return string("collection description", text, MAX_DESCRIPTION_CHARS)


def check_collection(name: object, description: object) -> None:
    """An ingest's collection options checked: a name that can name a collection, where given; a description only
    with a name, and one that can describe it."""
    if name is not None:
        check_name(name)
    if description is not None:
        if name is None:
            raise ConfigError("a description describes a collection: give the collection's name with it")
        check_description(description)


def setting_rows(name: str, description: str) -> dict[str, str]:
    """The settings row that holds ``name``'s description."""
    return {_ROW + name: json.dumps(description)}


def descriptions(settings: Mapping[str, str]) -> dict[str, str]:
    """Each described collection's description, by name, from the settings rows."""
    out: dict[str, str] = {}
    for key, value in settings.items():
        if key.startswith(_ROW):
            text = json.loads(value)
            out[key[len(_ROW):]] = text if isinstance(text, str) else ""
    return out


def of_metadata(metadata: Mapping[str, object]) -> str | None:
    """The collection a document's metadata names, or ``None``."""
    name = metadata.get(KEY)
    return name if isinstance(name, str) else None
