"""A :class:`~searchapp.filters.Filter` compiled to SQL: a condition over ``documents`` (metadata as JSON, path
prefix, path glob) and the SELECT of the passage ids it lets through, for SQLite (JSON1, ``GLOB``) or PostgreSQL
(``jsonb``, the glob as an anchored regular expression). Values are always bound parameters."""

from __future__ import annotations

import re
from typing import Any

from searchapp.filters import PATH_FIELDS, Filter
from searchapp.types import NUL

# A SQL SELECT of passage ids with its bound parameters.
Restrict = tuple[str, dict[str, Any]]


# Each dialect's SQL for a filter's parts: ``{f}`` is a metadata field, ``{p}`` a bound parameter's name; a path
# condition (filters.PATH_FIELDS) under its field's name.
_DIALECTS: dict[str, dict[str, str]] = {
    "sqlite": {
        # json_extract gives JSON true/false as 1/0, so booleans and numbers are told apart by json_type.
        "field": "{docs}.metadata, :{k}",
        "bool": "json_type({f}) = '{b}'",
        "str": "json_extract({f}) = :{p}",  # a SQL text never equals a number: no type check needed
        "num": "(json_type({f}) IN ('integer', 'real') AND json_extract({f}) = :{p})",
        "path_prefix": "substr({docs}.path, 1, length(:{p})) = :{p}",
        "path_glob": "{docs}.path GLOB :{p}",
        "all": "1",
        "none": "0",
    },
    "postgresql": {
        "field": "(CAST({docs}.metadata AS jsonb) -> CAST(:{k} AS text))",
        "bool": "{f} = CAST('{b}' AS jsonb)",
        "str": "{f} = to_jsonb(CAST(:{p} AS text))",
        "num": "(jsonb_typeof({f}) = 'number' AND CAST({f} AS numeric) = :{p})",  # 1 = 1.0, never "1" or true
        "path_prefix": "left({docs}.path, length(:{p})) = :{p}",
        "path_glob": "{docs}.path ~ :{p}",
        "all": "TRUE",
        "none": "FALSE",
    },
}


def where(flt: Filter, docs: str = "d", dialect: str = "sqlite") -> tuple[str, dict[str, Any]]:
    """A SQL condition over the documents table aliased ``docs``, and its bound parameters."""
    sql = _DIALECTS[dialect]
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for n, (key, value) in enumerate(sorted(flt.metadata.items())):
        params[f"fk{n}"] = f'$."{key}"' if dialect == "sqlite" else key
        field = sql["field"].format(docs=docs, k=f"fk{n}")
        options = []
        for m, v in enumerate(value if isinstance(value, list) else [value]):
            if isinstance(v, bool):
                options.append(sql["bool"].format(f=field, b="true" if v else "false"))
                continue
            if isinstance(v, str) and NUL in v:  # no stored value has one (types.NUL): never bound
                options.append(sql["none"])
                continue
            params[f"f{n}_{m}"] = v
            options.append(sql["str" if isinstance(v, str) else "num"].format(f=field, p=f"f{n}_{m}"))
        clauses.append("(" + " OR ".join(options) + ")")
    for name in PATH_FIELDS:  # a condition without its SQL above is a KeyError, never a filter quietly dropped
        value = getattr(flt, name)
        if value is None:
            continue
        if NUL in value:  # no stored path or text id has one (types.NUL): never bound
            clauses.append(sql["none"])
            continue
        params[f"f_{name}"] = glob_regex(value) if (dialect, name) == ("postgresql", "path_glob") else value
        clauses.append(sql[name].format(docs=docs, p=f"f_{name}"))
    return " AND ".join(clauses) or sql["all"], params


def glob_regex(glob: str) -> str:
    """SQLite ``GLOB`` semantics as an anchored POSIX regular expression: ``*`` any run (``/`` included), ``?`` one
    character, ``[abc]`` / ``[^abc]`` a class; everything else literal; case-sensitive."""
    out, i = ["^"], 0
    while i < len(glob):
        c = glob[i]
        # A class closes at the first "]" after its first character (so "[]a]" holds "]"); unclosed, "[" is literal.
        close = glob.find("]", i + 2) if c == "[" else -1
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif close != -1:
            out.append("[" + glob[i + 1 : close].replace("\\", "\\\\") + "]")
            i = close
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out) + "$"


def passages_sql(flt: Filter, dialect: str = "sqlite") -> Restrict:
    """A SELECT of the ids of the passages ``flt`` lets through, and its parameters."""
    cond, params = where(flt, dialect=dialect)
    return f"SELECT p.id FROM passages p JOIN documents d ON d.id = p.document_id WHERE {cond}", params
