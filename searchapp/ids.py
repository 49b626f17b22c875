"""What the id of an added text may be: the one rule, for every way a text comes in (``Index.add_texts`` and
``ingest_records``, ``POST /documents`` through them, and ``Client.add_texts`` before it sends).

Files are stored by absolute path and texts by id in one namespace, and both are shown by that key. An id that
could be read as a file's path would let a text pass for an ingested file: taking a removed file's place, or
sitting beside it in the results with the same name and forged text. So an id may not be an absolute path (POSIX
or Windows forms, on every OS, so that an index means the same wherever it is opened), a URL (``file:``,
``scheme://``) or a home path (``~``), and may not hide what it is: no white space at its ends, no control,
format (zero-width, bidi, BOM), separator or other space character but the plain space inside. The same tests
run on its NFKC form, so full-width look-alikes (``／etc``) are refused too. Whatever still looks alike is told
apart by ``source`` (``file`` or ``text``), which every hit, listing and page shows.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable
from pathlib import PureWindowsPath

from searchapp.errors import ConfigError

# Unicode categories an id may not hold: controls, format characters (U+200B, U+2060, U+FEFF, the bidi marks),
# surrogates, line and paragraph separators; spaces (Zs) are refused too, but for U+0020 inside.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp", "Zs"})
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://|file:", re.IGNORECASE)


def _is_file_like(key: str) -> str | None:
    """What ``key`` would pass for, or ``None``."""
    if key.startswith(("/", "\\")) or PureWindowsPath(key).is_absolute() or os.path.isabs(key):
        return "an absolute file path"
    if _URL.match(key):
        return "a URL"
    if key.startswith("~"):
        return "a path in a home folder"
    return None


def check_text_id(key: object, where: str = "") -> str:
    """``key`` if it may be the id of a text, else ``ConfigError`` saying why (``where``: which text, for the
    message)."""
    prefix = f"{where}: " if where else ""
    if not isinstance(key, str) or not key:
        raise ConfigError(f"{prefix}the id must be a non-empty string")
    shown = ascii(key)
    if key != key.strip():
        raise ConfigError(f"{prefix}id {shown} begins or ends with white space")
    for ch in key:
        if ch != " " and unicodedata.category(ch) in _HIDDEN:
            raise ConfigError(f"{prefix}id {shown} holds U+{ord(ch):04X} ({unicodedata.name(ch, 'unnamed')}), "
                              "a character that does not show: use visible characters and plain spaces")
    for form in dict.fromkeys((key, unicodedata.normalize("NFKC", key))):
        if (like := _is_file_like(form)) is not None:
            raise ConfigError(f"{prefix}id {shown} looks like {like}, which names ingested files only: choose "
                              "another id")
    return key


def key_list(keys: Iterable[object]) -> list[str]:
    """``keys`` (text ids or file paths, as ``Index.remove`` takes them) once each, in order; ``ConfigError`` for a
    single string given in place of a list, or a key that is not a string."""
    if isinstance(keys, str | bytes):
        raise ConfigError("ids must be a list of ids (for one, remove([id]))")
    out = list(dict.fromkeys(keys))
    if not all(isinstance(k, str) for k in out):
        raise ConfigError("ids must be strings")
    return out  # type: ignore[return-value]
