"""A :class:`~searchapp.filters.Filter` compiled to SQLite: a condition over ``documents`` (metadata through
JSON1, path prefix, path glob) and the SELECT of the passage ids it lets through."""

from __future__ import annotations

from typing import Any

from searchapp.filters import Filter

# A SQL SELECT of passage ids with its bound parameters.
Restrict = tuple[str, dict[str, Any]]


def where(flt: Filter, docs: str = "d") -> tuple[str, dict[str, Any]]:
    """A SQL condition over the documents table aliased ``docs``, and its bound parameters."""
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for n, (key, value) in enumerate(sorted(flt.metadata.items())):
        values = value if isinstance(value, list) else [value]
        params[f"fk{n}"] = f'$."{key}"'
        path = f"{docs}.metadata, :fk{n}"
        options = []
        for m, v in enumerate(values):
            # json_extract gives JSON true/false as 1/0, so booleans and numbers are told apart by json_type.
            if isinstance(v, bool):
                options.append(f"json_type({path}) = '{'true' if v else 'false'}'")
                continue
            params[f"f{n}_{m}"] = v
            if isinstance(v, str):  # a SQL text never equals a number: no type check needed
                options.append(f"json_extract({path}) = :f{n}_{m}")
            else:
                options.append(f"(json_type({path}) IN ('integer', 'real') AND json_extract({path}) = :f{n}_{m})")
        clauses.append("(" + " OR ".join(options) + ")")
    if flt.path_prefix is not None:
        params["fprefix"] = flt.path_prefix
        clauses.append(f"substr({docs}.path, 1, length(:fprefix)) = :fprefix")
    if flt.path_glob is not None:
        params["fglob"] = flt.path_glob
        clauses.append(f"{docs}.path GLOB :fglob")
    return " AND ".join(clauses) or "1", params


def passages_sql(flt: Filter) -> Restrict:
    """A SELECT of the ids of the passages ``flt`` lets through, and its parameters."""
    cond, params = where(flt)
    return f"SELECT p.id FROM passages p JOIN documents d ON d.id = p.document_id WHERE {cond}", params
