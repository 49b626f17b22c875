"""Which backend holds an index, from its location: a ``postgresql://`` (or ``postgresql+psycopg://``) URL is a
PostgreSQL schema (``store/postgres.py``), anything else a folder (``store/folder.py``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from searchapp.store.base import Stores
from searchapp.store.vector_policy import VectorPolicy


def is_postgres(location: str) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than a folder: ``postgres://``, ``postgresql://``
    or ``postgresql+DRIVER://`` (the store always connects with psycopg)."""
    scheme, sep, _ = location.partition("://")
    return bool(sep) and scheme.split("+")[0] in ("postgres", "postgresql")


# A password as a URL's query parameter (libpq reads ``?password=``).
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)


def _password(location: str) -> str | None:
    """The password written in ``location``, as written (``None`` if none), found whether or not the URL parses:
    the user information is all before the last ``@`` ahead of the query, the password what follows its
    first ``:``."""
    _, sep, rest = location.partition("://")
    if not sep:
        return None
    before_query = rest.split("?", 1)[0].split("#", 1)[0]
    user_info, at, _ = before_query.rpartition("@")
    if not at or ":" not in user_info:
        return None
    return user_info.split(":", 1)[1] or None


def hide_password(text: str, location: str) -> str:
    """``text`` (a message, an error's reason) with every occurrence of ``location``'s password replaced by
    ``***``, and any ``password=`` query parameter masked: a password never reaches a message, a log line or
    ``status``, even from a URL that does not parse."""
    password = _password(location)
    if password:
        # Its pieces too: a driver that read the URL otherwise (a raw '@' or '/' in the password) may name a
        # "host" or a "database" made of a part of it.
        pieces = [p for p in re.split(r"[@/]", password) if len(p) >= 3]
        for secret in sorted({password, *pieces}, key=len, reverse=True):
            text = text.replace(secret, "***")
    return _QUERY_PASSWORD.sub(r"\1***", text)


def display(location: str) -> str:
    """``location`` as shown to people: a URL without its password (whatever its scheme, whether or not it
    parses), a folder as given."""
    return hide_password(location, location) if "://" in location else location


def index_exists(location: str) -> bool:
    """Whether an index is stored at ``location`` (settings written: its creation finished)."""
    if is_postgres(location):
        from searchapp.errors import IndexNotFoundError
        from searchapp.store.postgres import PostgresStores

        try:
            PostgresStores(location, VectorPolicy(), lambda: 0, read_only=True).close()
        except IndexNotFoundError:
            return False
        return True
    from searchapp.store.database import has_settings
    from searchapp.store.folder import DB_NAME

    return has_settings(Path(location) / DB_NAME)


def open_stores(
    location: str, policy: VectorPolicy, dimension: Callable[[], int], read_only: bool, create: bool
) -> Stores:
    """The stores of the index at ``location``; ``create`` makes an empty one where there is none (else
    ``IndexNotFoundError``). An index whose settings are never stored is removed again with ``discard()``."""
    if is_postgres(location):
        from searchapp.store.postgres import PostgresStores

        return PostgresStores(location, policy, dimension, read_only=read_only, create=create)
    from searchapp.store.folder import FolderStores

    return FolderStores.open(Path(location), policy, dimension, read_only=read_only, create=create)
