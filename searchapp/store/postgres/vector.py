"""The PostgreSQL vector value on the wire: pgvector's binary form, the one encoding of every path a vector
takes (rows in by COPY, a query's vector as a parameter, the column read and written through SQLAlchemy).

The form is pgvector's own (``vector_send``/``vector_recv``; ``halfvec``'s alike): the dimension and a reserved
word (uint16 each), then the values, float4 for ``vector`` or float2 for ``halfvec``, big-endian. It is exact for
float32 both ways, with no decimal text to print or parse.

A parameter is typed by the statement (``CAST(:v AS vector)``, SQLAlchemy's ``::vector``): NumPy arrays are
dumped in this form with no type of their own (:func:`register`), and the server reads them as the ``vector``
its statement names.
"""

from __future__ import annotations

import struct
from functools import cache
from typing import Any

import numpy as np
from sqlalchemy import ColumnElement, cast, func
from sqlalchemy.engine import Dialect
from sqlalchemy.types import UserDefinedType

_HEADER = struct.Struct(">HH")


def encode(vec: Any, half: bool = False) -> bytes:
    """float32 ``(d,)`` (any shape of ``d`` values) as pgvector's binary ``vector`` value, or ``halfvec``'s
    (``half``: float16, NumPy's rounding to nearest)."""
    flat = np.asarray(vec).reshape(-1)
    return _HEADER.pack(flat.size, 0) + flat.astype(">f2" if half else ">f4").tobytes()


def decode(data: bytes) -> np.ndarray:
    """pgvector's binary ``vector`` value as float32 ``(d,)``."""
    return np.frombuffer(data, dtype=">f4", offset=_HEADER.size).astype(np.float32)


@cache
def dumper(oid: int = 0, half: bool = False) -> type:
    """A psycopg binary dumper of NumPy arrays by :func:`encode`: as the type ``oid`` (a column's, for COPY), or
    untyped (0: the statement says which type). One class for each, made once."""
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class VectorDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: Any) -> bytes:
            return encode(obj, half)

    VectorDumper.oid = oid
    return VectorDumper


def register(dbapi_conn: Any, record: Any = None) -> None:
    """On a new psycopg connection (a SQLAlchemy ``connect`` listener): NumPy arrays bound as parameters are
    pgvector values in the binary form."""
    dbapi_conn.adapters.register_dumper(np.ndarray, dumper())


class PgVector(UserDefinedType[np.ndarray]):
    """The passages' vector column on PostgreSQL, float32 ``(d,)`` arrays both ways: bound as a ``vector``
    parameter (``%(p)s::vector``, dumped by :func:`register`'s dumper) and read as ``vector_send``'s bytes, cast
    to ``vector`` first (a ``halfvec`` column's float16 values are exact as float32)."""

    cache_ok = True
    render_bind_cast = True

    def get_col_spec(self, **kw: Any) -> str:
        return "vector"

    def column_expression(self, colexpr: ColumnElement[Any]) -> ColumnElement[Any]:
        return func.vector_send(cast(colexpr, PgVector()), type_=self)

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        return lambda value: None if value is None else decode(value)
