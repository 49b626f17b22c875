"""Where a PostgreSQL index lives and the settings its URL carries: the SQLAlchemy URL and the index's schema
(``?schema=NAME``), the parameters that are the store's own (``STORE_PARAMETERS``), each read and checked here,
and the location as shown (its password hidden)."""

from __future__ import annotations

import re

from sqlalchemy.engine import URL, make_url

from searchapp.errors import ConfigError
from searchapp.store.masking import hide_password

DEFAULT_SCHEMA = "searchapp"
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# PostgreSQL's own schemas besides pg_*: an index there would put its tables among the catalog's views.
_SYSTEM_SCHEMAS = ("information_schema",)
# The URL's parameters that are the store's, not the driver's.
STORE_PARAMETERS = ("pool_size", "vector_type", "maintenance_work_mem", "max_parallel_maintenance_workers")
VECTOR_TYPES = ("vector", "halfvec")


def parse_location(location: str) -> tuple[URL, str]:
    """The SQLAlchemy URL (driver psycopg, whatever driver the URL names) and the index's schema
    (``?schema=NAME``, default ``searchapp``)."""
    try:
        url = make_url(location)
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy raises a plain ArgumentError on any malformed URL
        raise ConfigError(
            f"{_masked(location)!r} is not a database URL: {hide_password(str(exc), location)}"
        ) from None
    query = dict(url.query)
    schema = str(query.pop("schema", DEFAULT_SCHEMA))
    if not schema or re.search(r"[?&]schema=(?:&|#|$)", location):  # SQLAlchemy drops an empty value
        raise ConfigError(f"schema is empty: give ?schema=NAME, or leave it out for the default {DEFAULT_SCHEMA!r}")
    if not _SCHEMA_NAME.fullmatch(schema) or schema.startswith("pg_") or schema in _SYSTEM_SCHEMAS:
        raise ConfigError(f"schema {schema!r}: use lower-case letters, digits and '_' (at most 63), not starting "
                          f"with pg_ and not {', '.join(_SYSTEM_SCHEMAS)}: PostgreSQL's own")
    for name in STORE_PARAMETERS:  # read by the store itself (store_parameter)
        query.pop(name, None)
    unknown = sorted(set(query) - _connection_parameters(set(query)))
    if unknown:
        raise ConfigError(f"unknown URL parameter {', '.join(map(repr, unknown))}: use schema, "
                          f"{', '.join(STORE_PARAMETERS)} or a libpq connection parameter (sslmode, "
                          "connect_timeout, application_name, ...)")
    return url.set(drivername="postgresql+psycopg", query=query), schema


def _connection_parameters(given: set[str]) -> set[str]:
    """The names libpq takes as connection parameters (``given`` when psycopg is missing: the store then says
    what to install). ``options`` is the store's own (the search path)."""
    try:
        from psycopg import pq
    except ImportError:
        return given
    return {o.keyword.decode() for o in pq.Conninfo.get_defaults()} - {"options"}


def store_parameter(location: str, name: str) -> str | None:
    """A URL parameter the store reads itself (one of ``STORE_PARAMETERS``), ``None`` when not given."""
    value = make_url(location).query.get(name)
    return None if value is None else str(value)


def vector_type_of(location: str) -> str | None:
    """``?vector_type=``: ``vector`` (float32) or ``halfvec`` (float16: half the memory and disk), chosen when the
    index is created; ``None`` when the URL does not say."""
    chosen = store_parameter(location, "vector_type")
    if chosen is not None and chosen not in VECTOR_TYPES:
        raise ConfigError(f"vector_type {chosen!r}: choose one of {', '.join(VECTOR_TYPES)}")
    return chosen


def build_settings_of(location: str) -> dict[str, str]:
    """Server settings for index builds given in the URL (``?maintenance_work_mem=2GB``,
    ``?max_parallel_maintenance_workers=4``), checked to be plain values."""
    out = {}
    for name in ("maintenance_work_mem", "max_parallel_maintenance_workers"):
        value = store_parameter(location, name)
        if value is not None:
            if not re.fullmatch(r"\d+\s*(?:[kMGT]B)?", value):
                raise ConfigError(f"{name} {value!r}: give a number (memory with kB, MB, GB or TB)")
            out[name] = value
    return out


def pool_size_of(location: str) -> int:
    """Pooled connections a process keeps for queries (``?pool_size=N``, default 8); up to twice as many are
    opened under load. Mind the server's ``max_connections`` when running many processes."""
    raw = store_parameter(location, "pool_size") or "8"
    try:
        size = int(str(raw))
    except ValueError:
        size = 0
    if size < 1:
        raise ConfigError(f"pool_size {raw!r}: give a whole number of at least 1")
    return size


def display_location(location: str) -> str:
    """The location with any password hidden, for messages and ``status``."""
    try:
        return _masked(make_url(location).render_as_string(hide_password=True))
    except Exception:  # noqa: BLE001 - masked as written when it does not parse
        return _masked(location)


def _masked(location: str) -> str:
    return hide_password(location, location)
