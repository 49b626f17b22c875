"""Alembic environment: runs on the connection the library hands over (or on the ini's URL by hand)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

config = context.config
connection = config.attributes.get("connection")


def _run(conn: object) -> None:
    # render_as_batch: SQLite alters tables by copy-and-move; batch mode makes later migrations work there.
    # version_table_schema: an index in a PostgreSQL schema keeps its revision there.
    context.configure(connection=conn, render_as_batch=True,
                      version_table_schema=config.attributes.get("version_table_schema"))
    with context.begin_transaction():
        context.run_migrations()


if connection is not None:
    _run(connection)
else:
    with create_engine(config.get_main_option("sqlalchemy.url")).connect() as conn:
        _run(conn)
