"""The search options, declared once: what a search asks beside its queries.

:class:`SearchKwargs` is the declaration: each option's type, and in ``Annotated`` its
:class:`~searchapp.setting.Setting` (default, help, choices, bounds); the per-query fusion overrides are the
fields of :class:`~searchapp.query.fusion.Fusion` (declared the same way, ``fusion.SETTINGS``), typed for keyword
use by :class:`FusionKwargs`. Derived from it:

- the keyword arguments of ``Index.search`` / ``search_batch``, ``QueryEngine.search_batch`` and ``Client``
  (``**options: Unpack[SearchKwargs]``), and their one validation, :func:`resolve`;
- the HTTP API's request fields (``server/schemas.py``), where the fusion overrides are nested under ``fusion``
  (:func:`nest`, :func:`flatten`);
- the ``query`` command's options (``cli/options.search_options``).

A new option declared here appears in all of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Annotated, Any, TypedDict

from searchapp.analysis import ANALYSIS
from searchapp.errors import ConfigError
from searchapp.filters import FIELDS, Filter
from searchapp.query.fusion import SETTINGS, Fusion
from searchapp.setting import MAX_K, MAX_QUERY_TERMS, Setting, declared, string

MODES = ("hybrid", "dense", "lexical")
GROUP_BY = ("document",)  # what hits can be grouped by


class FusionKwargs(TypedDict, total=False):
    """The fusion overrides as keyword arguments: the fields of :class:`Fusion`, typed for editors (``None`` keeps
    the index's setting). tests/unit/test_options.py checks that these are Fusion's fields."""

    method: str | None
    norm: str | None
    alpha: float | None
    rrf_k: int | None
    k0: int | None
    alpha_question: float | None
    alpha_statement: float | None
    lexical_spread: float | None
    document_weight: float | None
    document_threshold: float | None
    rerank: str | None
    rerank_depth: int | None


class SearchKwargs(FusionKwargs, total=False):
    """The options of a search, as keyword arguments (each optional; its default applies)."""

    k: Annotated[int, Setting(10, "Number of hits.", ge=1, per_request=MAX_K)]
    mode: Annotated[str, Setting("hybrid", "{choices}.", choices=MODES)]
    filters: Annotated[Filter | Mapping[str, Any] | None, Setting(
        None, f"Only documents that match: a Filter or its JSON form ({', '.join(FIELDS)}).",
        parse=Filter.parse)]
    explain: Annotated[bool, Setting(
        False, "Show why each hit ranks there: both raw and normalised scores, the dense weight chosen and why, the "
        "matched terms.", doc="Give every hit an explain object (docs/cli.md).")]
    # On the cosine because it means the same for every query; fused scores are relative to the query's candidates
    # and BM25 grows with the query's length and rare words.
    min_score: Annotated[float | None, Setting(
        None, "Only passages whose cosine with the query is at least this (dense and hybrid modes; comparable "
        "across queries, docs/cli.md).", doc="Only passages whose cosine with the query is at least this (dense "
        "and hybrid modes).", ge=-1, le=1, invalid="min_score is a cosine, in [-1, 1]; got {value!r}")]
    offset: Annotated[int, Setting(0, "Skip this many hits first (the next page: --offset K).",
                                   doc="Skip this many hits first (pagination).", ge=0, per_request=MAX_K)]
    group_by: Annotated[str | None, Setting(
        None, "{choices}: each document once, by its best passage, with its other matching passages counted.",
        doc="{choices}: each document's best passage once, its other passages' ids folded in.", choices=GROUP_BY)]


# Every search option by name, in declaration order (the order of the CLI's options).
OPTIONS: dict[str, Setting] = declared(SearchKwargs)


def check(name: str, value: Any) -> Any:
    """``value`` if search option ``name`` takes it (a filter parsed), else ``ConfigError``."""
    return OPTIONS[name].check(value)


def check_queries(queries: Any) -> list[str]:
    """``queries`` if it is a list of strings, each Unicode text (a lone surrogate is refused: ``setting.string``),
    else ``ConfigError`` naming the query by its position."""
    if isinstance(queries, str) or not isinstance(queries, Sequence) or not all(isinstance(q, str) for q in queries):
        raise ConfigError("queries must be a list of strings (for one query, use search)")
    for i, q in enumerate(queries):
        string("the query" if len(queries) == 1 else f"query {i}", q)
    return list(queries)


def check_query_terms(queries: Sequence[str]) -> None:
    """``ConfigError`` for a query with more than ``MAX_QUERY_TERMS`` distinct terms after analysis, naming it by
    its position: what a lexical or hybrid search hands the lexical engine is bounded whatever the surface."""
    for i, q in enumerate(queries):
        n = len(ANALYSIS.query_words(q))
        if n > MAX_QUERY_TERMS:
            which = "the query" if len(queries) == 1 else f"query {i}"
            raise ConfigError(f"{which} has {n:,} distinct terms; lexical and hybrid search take at most "
                              f"{MAX_QUERY_TERMS:,} (dense search takes any query)")


def resolve_fusion(defaults: Fusion, overrides: Mapping[str, Any] | None) -> Fusion:
    """``defaults`` with per-query overrides (``None`` values ignored); ``ConfigError`` on an unknown name."""
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    unknown = sorted(set(given) - set(SETTINGS))
    if unknown:
        raise ConfigError(f"unknown fusion setting {', '.join(unknown)}: use {', '.join(sorted(SETTINGS))}")
    return replace(defaults, **given)


def resolve(options: Mapping[str, Any], fusion: Fusion) -> tuple[dict[str, Any], Fusion]:
    """The one validation of a search's options: every option checked, with its default where not given
    (``filters`` parsed to a :class:`Filter` or ``None``), and the hybrid settings, ``fusion`` with the other
    keywords as overrides. Raises ``ConfigError``."""
    asked = {name: opt.check(options.get(name, opt.default)) for name, opt in OPTIONS.items()}
    if asked["min_score"] is not None and asked["mode"] == "lexical":
        # Lexical mode computes no cosine (it never loads the model): refused rather than quietly ignored.
        raise ConfigError("min_score is a threshold on the cosine, which lexical mode does not compute: use mode "
                          "dense or hybrid")
    return asked, resolve_fusion(fusion, {k: v for k, v in options.items() if k not in OPTIONS})


def nest(options: Mapping[str, Any]) -> dict[str, Any]:
    """Search keyword arguments in the HTTP API's form: every option (its default where not given), and the
    other keywords, the fusion overrides, under ``fusion`` (``None`` when there are none)."""
    body = {name: options.get(name, opt.default) for name, opt in OPTIONS.items()}
    body["fusion"] = {k: v for k, v in options.items() if k not in OPTIONS} or None
    return body


def flatten(body: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`nest` undone: a request's options and its fusion overrides (those given) as keyword arguments of a
    search; other keys of the request (its queries) are left out."""
    kwargs = {name: body[name] for name in OPTIONS if name in body}
    kwargs.update({k: v for k, v in (body.get("fusion") or {}).items() if v is not None})
    return kwargs
