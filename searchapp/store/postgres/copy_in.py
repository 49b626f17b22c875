"""Rows into an index's tables by binary ``COPY`` (psycopg's), the driver's fastest path: a few times an
INSERT's rate for a bulk load."""

from __future__ import annotations

from sqlalchemy import Connection, Table, text

from searchapp.store.postgres import vector as wire
from searchapp.store.postgres.ddl import quoted


def copy_rows(conn: Connection, schema: str, table: Table, rows: list[dict[str, object]]) -> None:
    """``rows`` (keyed by column key, every row the same keys) into ``table`` of ``schema``; vectors (float32
    arrays) in pgvector's binary form (``vector.py``), as the column's type."""
    columns = [c for c in table.columns if c.key in rows[0]]
    names, keys = [c.name for c in columns], [c.key for c in columns]
    raw = conn.connection.driver_connection
    oids = dict(conn.execute(text("SELECT attname, atttypid::int FROM pg_attribute WHERE attrelid = "
                                  "to_regclass(:t) AND attnum > 0 AND NOT attisdropped"),
                             {"t": f"{quoted(schema)}.{table.name}"}).all())
    vector = next((n for n in names if n == "embedding"), None)
    if vector is not None:
        half = conn.execute(text("SELECT typname FROM pg_type WHERE oid = :o"), {"o": oids[vector]}).scalar_one()
        # By the column's type only (COPY's set_types): an array bound as a parameter stays untyped float32.
        raw.adapters.register_dumper(None, wire.dumper(oids[vector], half == "halfvec"))
    from psycopg import sql

    statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.Identifier(schema, table.name), sql.SQL(", ").join(map(sql.Identifier, names)))
    with raw.cursor() as cur, cur.copy(statement) as copy:
        copy.set_types([oids[n] for n in names])
        for row in rows:
            copy.write_row([row[k] for k in keys])
