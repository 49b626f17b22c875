"""The search options, declared once: what a search asks beside its queries.

:class:`SearchKwargs` is the declaration: each option's type, and in ``Annotated`` its :class:`Option` (default,
help, choices, bounds); the per-query fusion overrides are the fields of :class:`~searchapp.query.fusion.Fusion`
(their help, choices and bounds are Fusion's), typed for keyword use by :class:`FusionKwargs`. Derived from it:

- the keyword arguments of ``Index.search`` / ``search_batch``, ``QueryEngine.search_batch`` and ``Client``
  (``**options: Unpack[SearchKwargs]``), and their one validation, :func:`resolve`;
- the HTTP API's request fields (``server/schemas.py``), where the fusion overrides are nested under ``fusion``
  (:func:`nest`, :func:`flatten`);
- the ``query`` command's options (``cli/common.search_options``).

A new option declared here appears in all of them.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Annotated, Any, TypedDict

from searchapp.errors import ConfigError
from searchapp.filters import Filter
from searchapp.query.fusion import Fusion
from searchapp.types import MAX_WHOLE

MODES = ("hybrid", "dense", "lexical")
GROUP_BY = ("document",)  # what hits can be grouped by
# The most hits, and the deepest offset, one HTTP request may ask: one request must not be able to hold the
# server for minutes (the Python API and the CLI take any).
MAX_K = 1000
# The longest wait for another writer (``--wait``, ``Index(lock_wait=...)``): 115 days, longer than any real wait
# and short enough for every clock and timer it reaches.
MAX_WAIT_S = 10**7
# The largest file an ingest reads (``--max-file-mb``, in MiB): 1 TiB, so that its bytes stay a whole number.
MAX_FILE_MB = 2**20
# The most CPU threads a model runs on (``--threads``): what torch and ONNX Runtime take as a C int.
MAX_THREADS = 2**31 - 1


def whole(name: str, value: Any, ge: int = 0, le: int = MAX_WHOLE) -> int:
    """``value`` if it is a whole number in ``[ge, le]`` (never a bool), else ``ConfigError`` naming both bounds:
    the one check of every integer the library is given (options, passage ids, offsets, positions)."""
    if isinstance(value, bool) or not isinstance(value, int) or not ge <= value <= le:
        raise ConfigError(f"{name} must be a whole number in [{ge}, {le}], got {value!r}")
    return value


def seconds(name: str, value: Any, le: float = MAX_WAIT_S) -> float:
    """``value`` as seconds if it is a number in ``[0, le]`` (never a bool, never NaN), else ``ConfigError``
    naming the bound."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= le:
        raise ConfigError(f"{name} must be a number of seconds in [0, {le}], got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Option:
    """What the engine's validation, the HTTP schema and the CLI derive from one search option.

    ``help``: the CLI's help; ``doc``: the HTTP schema's description (``None``: none); in both ``{choices}`` stands
    for the valid names. ``choices``: the valid values (``None`` is valid too where it is the default). ``ge`` /
    ``le``: bounds everywhere (a bounded option must be a number of its type, never a bool; a whole number is
    at most ``MAX_WHOLE`` where ``le`` is not given: :meth:`upper`); ``per_request``: the
    upper bound of one HTTP request. ``invalid``: the message for a value outside them (``{name}``, ``{value}``,
    ``{choices}``, ``{ge}``, ``{le}``), where it differs from the usual one. ``parse``: turns the value into what
    the engine uses, raising ``ConfigError`` (filters). ``name`` and ``kind`` (the annotated type) are filled in
    from the declaration.
    """

    default: Any
    help: str
    doc: str | None = None
    choices: tuple[str, ...] = ()
    ge: float | None = None
    le: float | None = None
    per_request: int | None = None
    invalid: str | None = None
    parse: Callable[[Any], Any] | None = None
    name: str = ""
    kind: Any = None

    def text(self, template: str) -> str:
        """``template`` (``help`` or ``doc``) with the valid names in place of ``{choices}``."""
        return template.format(choices=", ".join(self.choices))

    def check(self, value: Any) -> Any:
        """``value`` if this option takes it (parsed, where the option has a parser), else ``ConfigError``."""
        if self.parse is not None:
            return self.parse(value)
        if value is None and self.default is None:
            return None
        if self.choices:
            ok = value in self.choices
        elif self.ge is not None or self.le is not None:
            number: Any = int if self.number() is int else int | float
            high = self.upper()
            ok = (not isinstance(value, bool) and isinstance(value, number)
                  and (self.ge is None or self.ge <= value) and (high is None or value <= high))
        else:
            return value
        if not ok:
            raise ConfigError(self.message(value))
        return value

    def upper(self) -> float | None:
        """The upper bound everywhere: ``le``, else ``MAX_WHOLE`` for a whole number (none for other numbers)."""
        if self.le is None and self.number() is int:
            return MAX_WHOLE
        return self.le

    def number(self) -> type:
        """The option's type without ``None`` (``int`` for ``int | None``)."""
        args = [a for a in typing.get_args(self.kind) if a is not type(None)]
        return args[0] if len(args) == 1 else self.kind  # type: ignore[no-any-return]

    def message(self, value: Any) -> str:
        """Why ``value`` is refused: ``invalid``, else the usual message for an option of this kind."""
        if self.invalid is not None:
            template = self.invalid
        elif self.choices:
            template = "unknown {name} {value!r}: use one of {choices}"
        elif self.number() is int:
            template = "{name} must be a whole number in [{ge}, {le}], got {value!r}"
        else:
            template = "{name} must be a number in [{ge}, {le}], got {value!r}"
        return template.format(name=self.name, value=value, choices=", ".join(self.choices), ge=self.ge,
                               le=self.upper())


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


class SearchKwargs(FusionKwargs, total=False):
    """The options of a search, as keyword arguments (each optional; its default applies)."""

    k: Annotated[int, Option(10, "Number of hits.", ge=1, per_request=MAX_K)]
    mode: Annotated[str, Option("hybrid", "{choices}.", choices=MODES,
                                invalid="unknown mode '{value}': use one of {choices}")]
    filters: Annotated[Filter | Mapping[str, Any] | None, Option(
        None, "Only documents that match: a Filter or its JSON form (metadata, path_prefix, path_glob).",
        parse=Filter.parse)]
    explain: Annotated[bool, Option(
        False, "Show why each hit ranks there: both raw and normalised scores, the dense weight chosen and why, the "
        "matched terms.", doc="Give every hit an explain object (docs/cli.md).")]
    # On the cosine because it means the same for every query; fused scores are relative to the query's candidates
    # and BM25 grows with the query's length and rare words.
    min_score: Annotated[float | None, Option(
        None, "Only passages whose cosine with the query is at least this (dense and hybrid modes; comparable "
        "across queries, docs/cli.md).", doc="Only passages whose cosine with the query is at least this (dense "
        "and hybrid modes).", ge=-1, le=1, invalid="min_score is a cosine, in [-1, 1]; got {value!r}")]
    offset: Annotated[int, Option(0, "Skip this many hits first (the next page: --offset K).",
                                  doc="Skip this many hits first (pagination).", ge=0, per_request=MAX_K)]
    group_by: Annotated[str | None, Option(
        None, "{choices}: each document once, by its best passage, with its other matching passages counted.",
        doc="{choices}: each document's best passage once, its other passages' ids folded in.", choices=GROUP_BY)]


def _declared() -> dict[str, Option]:
    hints = typing.get_type_hints(SearchKwargs, include_extras=True)
    out: dict[str, Option] = {}
    for name, hint in hints.items():
        meta = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Option)]
        if meta:
            out[name] = replace(meta[0], name=name, kind=typing.get_args(hint)[0])
    return out


# Every search option by name, in declaration order (the order of the CLI's options).
OPTIONS: dict[str, Option] = _declared()


def check(name: str, value: Any) -> Any:
    """``value`` if search option ``name`` takes it (a filter parsed), else ``ConfigError``."""
    return OPTIONS[name].check(value)


def resolve_fusion(defaults: Fusion, overrides: Mapping[str, Any] | None) -> Fusion:
    """``defaults`` with per-query overrides (``None`` values ignored); ``ConfigError`` on an unknown name."""
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    valid = {f.name for f in fields(Fusion)}
    unknown = sorted(set(given) - valid)
    if unknown:
        raise ConfigError(f"unknown fusion setting {', '.join(unknown)}: use {', '.join(sorted(valid))}")
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
