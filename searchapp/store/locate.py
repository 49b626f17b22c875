"""Which backend holds an index, from its location: a ``postgresql://`` (or ``postgresql+psycopg://``) URL is a
PostgreSQL schema (``store/postgres/``), anything else a folder (``store/folder.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from searchapp.store.base import Stores
from searchapp.store.masking import hide_password
from searchapp.store.vector_policy import VectorPolicy


def is_postgres(location: str) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than a folder: ``postgres://``, ``postgresql://``
    or ``postgresql+DRIVER://`` (the store always connects with psycopg)."""
    scheme, sep, _ = location.partition("://")
    return bool(sep) and scheme.split("+")[0] in ("postgres", "postgresql")


def display(location: str) -> str:
    """``location`` as shown to people: a URL without its password (whatever its scheme, whether or not it
    parses), a folder as given."""
    return hide_password(location, location) if "://" in location else location


def index_exists(location: str) -> bool:
    """Whether an index is stored at ``location`` (settings written: its creation finished)."""
    if is_postgres(location):
        from searchapp.errors import IndexNotFoundError, SchemaError
        from searchapp.store.postgres import PostgresStores

        try:
            PostgresStores(location, VectorPolicy(), lambda: 0, read_only=True).close()
        except IndexNotFoundError:
            return False
        except SchemaError:  # one there, behind this version's schema: a writable open migrates it
            return True
        return True
    from searchapp.store.folder import DB_NAME
    from searchapp.store.sqlite import has_settings

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
