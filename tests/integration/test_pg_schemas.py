"""An index's PostgreSQL schema is its own: an empty ``schema=``, PostgreSQL's own schemas and a schema holding
another application's tables are refused in one line, before anything is created (issue: hardening, round 3)."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import create_engine, text

from searchapp import Index, IndexConfig
from searchapp.errors import ConfigError
from searchapp.store.postgres import parse_location


@pytest.mark.parametrize("schema, message", [
    ("", "schema is empty"), ("information_schema", "PostgreSQL's own"), ("pg_catalog", "not starting with pg_"),
])
def test_reserved_and_empty_schemas_are_refused(schema: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_location(f"postgresql://app@localhost/db?schema={schema}")


def test_a_schema_holding_other_tables_is_refused(pg_url: str, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    url, schema = parse_location(pg_url)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        conn.execute(text(f'CREATE TABLE "{schema}".invoices (id int)'))
        conn.execute(text(f'CREATE TABLE "{schema}".alembic_version (version_num varchar(32))'))
        conn.execute(text(f"INSERT INTO \"{schema}\".alembic_version VALUES ('abc123')"))
    try:
        for create in (True, False):
            with pytest.raises(ConfigError, match=re.escape(f"schema '{schema}' holds tables that are not this "
                                                            "index's (invoices)")):
                Index(pg_url, create=create, config=IndexConfig(), encoder=fake_encoder)
        with engine.connect() as conn:  # nothing was created there
            names = conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = :s"), {"s": schema})
            assert sorted(names.scalars()) == ["alembic_version", "invoices"]
    finally:
        with engine.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()
