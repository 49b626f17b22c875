"""Where a PostgreSQL index lives and the settings its URL carries: the SQLAlchemy URL and the index's schema
(``?schema=NAME``), the parameters that are the store's own (``STORE_PARAMETERS``), each read and checked here,
and the location as shown (its password hidden)."""

from __future__ import annotations

import os
import re

from sqlalchemy.engine import URL, make_url

from searchapp.errors import ConfigError
from searchapp.setting import whole
from searchapp.store.masking import hide_password

DEFAULT_SCHEMA = "searchapp"
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# PostgreSQL's own schemas besides pg_*: an index there would put its tables among the catalog's views.
_SYSTEM_SCHEMAS = ("information_schema",)
# The URL's parameters that are the store's, not the driver's.
STORE_PARAMETERS = ("pool_size", "vector_type", "maintenance_work_mem", "max_parallel_maintenance_workers")
VECTOR_TYPES = ("vector", "halfvec")
# PostgreSQL's own bounds of the build settings (guc_tables.c): a value outside them fails only at the first build.
MIN_MAINTENANCE_KB, MAX_MAINTENANCE_KB = 1024, 2**31 - 1
MAX_MAINTENANCE_WORKERS = 1024
# Far more than one process can use, and below any server's max_connections limit (262143).
MAX_POOL_SIZE = 1000
# ASCII digits only: \d would take any script's digits, which the server refuses. At most 20 of them, so that
# ``int`` never reads an unbounded string.
_DIGITS = re.compile(r"[0-9]{1,20}")
_MEMORY = re.compile(r"([0-9]{1,20})\s*(kB|MB|GB|TB)?", re.ASCII)
_UNIT_KB = {"kB": 1, "MB": 1024, "GB": 1024**2, "TB": 1024**3}


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
    what to install). ``options`` is merged with the store's own (:func:`session_options`)."""
    try:
        from psycopg import pq
    except ImportError:
        return given
    return {o.keyword.decode() for o in pq.Conninfo.get_defaults()}


def session_options(url: URL, schema: str) -> str:
    """libpq's ``options`` for every connection of the index: ``PGOPTIONS`` (the environment's, as libpq reads
    it), then the URL's ``options=``, then the index's search path (our tables in its schema, the extensions' in
    public). libpq would take only one of them; the server applies all three in order, so a setting given twice
    takes the later value: the user's ``statement_timeout`` or ``role`` holds, and the search path is the
    index's."""
    given = url.query.get("options", ())
    parts = [os.environ.get("PGOPTIONS", ""), *((given,) if isinstance(given, str) else given)]
    return " ".join([*(p.strip() for p in parts if p.strip()), f'-csearch_path="{schema}",public'])


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
    ``?max_parallel_maintenance_workers=4``), each checked against the range PostgreSQL itself takes, before
    anything is created: the memory as kB."""
    out = {}
    memory = store_parameter(location, "maintenance_work_mem")
    if memory is not None:
        out["maintenance_work_mem"] = f"{_memory_kb('maintenance_work_mem', memory)}kB"
    workers = store_parameter(location, "max_parallel_maintenance_workers")
    if workers is not None:
        out["max_parallel_maintenance_workers"] = str(_whole_parameter("max_parallel_maintenance_workers", workers,
                                                                       0, MAX_MAINTENANCE_WORKERS))
    return out


def pool_size_of(location: str) -> int:
    """Pooled connections a process keeps for queries (``?pool_size=N``, default 8, at most ``MAX_POOL_SIZE``); up
    to twice as many are opened under load. Mind the server's ``max_connections`` when running many processes."""
    raw = store_parameter(location, "pool_size")
    return 8 if raw is None else _whole_parameter("pool_size", raw, 1, MAX_POOL_SIZE)


def _whole_parameter(name: str, raw: str, ge: int, le: int) -> int:
    """A URL parameter's whole number in ``[ge, le]``: ASCII digits only (``int`` would also read other scripts'
    digits), else ``ConfigError`` naming the range."""
    if not _DIGITS.fullmatch(raw):
        raise ConfigError(f"{name} must be a whole number in [{ge}, {le}], got {raw!r}")
    return whole(name, int(raw), ge, le)


def _memory_kb(name: str, raw: str) -> int:
    """A memory size in kB (a whole number of kB, MB, GB or TB; kB without a unit, as PostgreSQL reads it) within
    PostgreSQL's range for ``maintenance_work_mem``, else ``ConfigError`` naming the range."""
    found = _MEMORY.fullmatch(raw)
    kb = int(found.group(1)) * _UNIT_KB[found.group(2) or "kB"] if found else -1
    if not MIN_MAINTENANCE_KB <= kb <= MAX_MAINTENANCE_KB:
        raise ConfigError(f"{name} {raw!r}: give a memory size from 1MB to {MAX_MAINTENANCE_KB}kB (a whole number "
                          "with kB, MB, GB or TB)")
    return kb


def display_location(location: str) -> str:
    """The location with any password hidden, for messages and ``status``."""
    try:
        return _masked(make_url(location).render_as_string(hide_password=True))
    except Exception:  # noqa: BLE001 - masked as written when it does not parse
        return _masked(location)


def _masked(location: str) -> str:
    return hide_password(location, location)
