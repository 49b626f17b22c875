"""A setting declared once, and the bounds of every number the library is given.

:class:`Setting` is one setting's declaration: its default, help, valid names and bounds. The search options
(``query/options.SearchKwargs``, in ``Annotated``) and the fusion settings (``query/fusion.Fusion``, in its fields'
metadata, :meth:`Setting.field`) are declared with it, and :func:`declared` reads either declaration back: the
one validation (:meth:`Setting.check`), the CLI's options (``cli/options``) and the HTTP schema
(``server/schemas``) are built from what it gives.

:func:`whole` is the one rule for a bounded whole number (a setting's, a passage id, an offset, a position),
:func:`number` the one for other numbers, :func:`string` the one for a string handed to a database as it is (a
filter's, a query); the other bounds of the library are the constants below.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from searchapp.errors import ConfigError
from searchapp.types import MAX_WHOLE

# The most hits, and the deepest offset, one HTTP request may ask (``k``, ``offset``, ``k0``): one request must
# not be able to hold the server for minutes (the Python API and the CLI take any).
MAX_K = 1000
# The longest wait for another writer (``--wait``, ``Index(lock_wait=...)``): 115 days, longer than any real wait
# and short enough for every clock and timer it reaches.
MAX_WAIT_S = 10**7
# The largest file an ingest reads (``--max-file-mb``, in MiB): 1 TiB, so that its bytes stay a whole number.
MAX_FILE_MB = 2**20
# What torch, ONNX Runtime and FAISS take as a C int: the most CPU threads a model runs on (``--threads``), and
# the most IVF lists probed (``nprobe``).
MAX_C_INT = 2**31 - 1
MAX_THREADS = MAX_C_INT
# The most GPUs one Ray encoder actor may reserve (``--gpus-per-actor``): more than any one machine holds.
MAX_GPUS_PER_ACTOR = 64
# The most characters of a passage's context on each side: what one HTTP request may ask
# (``GET /passages/{id}/context``'s ``chars``), and how far ``searchapp show ID --context N`` reads for its lines.
MAX_CONTEXT_CHARS = 20_000
# The most distinct terms a lexical or hybrid query may hand the lexical engine, counted after analysis (a run of
# Chinese or Japanese is a term a two-letter unit), on every surface: an engine's cost grows with the terms OR'd
# (FTS5's with their square), and a real question has tens. Dense search takes any query.
MAX_QUERY_TERMS = 1024
# The size in MB above which a file is skipped unless an ingest asks otherwise (--max-file-mb).
DEFAULT_FILE_MB = 100
# Characters of context on each side of a passage when none is asked (Index.context, the HTTP context route).
DEFAULT_CONTEXT_CHARS = 300
# A filter's bounds (``filters.Filter``), on every way in. Each string of it (a path prefix, a metadata key or
# string value) at most MAX_FILTER_CHARS characters: PATH_MAX, so any file's path is a prefix. A path glob at most
# MAX_GLOB_CHARS: PostgreSQL runs a glob with a character class as a regular expression, whose cost per document
# grows with the glob's length (docs/reliability.md). At most MAX_FILTER_KEYS metadata keys, MAX_FILTER_KEY_VALUES
# values for one key and MAX_FILTER_VALUES in all. Within them a filter's SQL stays inside SQLite's limits (an
# expression 1,000 deep: one level per key and per value of a key; a GLOB pattern of 50,000 bytes).
MAX_FILTER_CHARS = 4096
MAX_GLOB_CHARS = 256
MAX_FILTER_KEYS = 64
MAX_FILTER_KEY_VALUES = 256
MAX_FILTER_VALUES = 1024


def whole(name: str, value: Any, ge: int = 0, le: int = MAX_WHOLE) -> int:
    """``value`` if it is a whole number in ``[ge, le]`` (never a bool), else ``ConfigError`` naming both bounds:
    the one check of every integer the library is given (settings, passage ids, offsets, positions)."""
    if isinstance(value, bool) or not isinstance(value, int) or not ge <= value <= le:
        raise ConfigError(f"{name} must be a whole number in [{ge}, {le}], got {value!r}")
    return value


def number(name: str, value: Any, ge: float | None = None, le: float | None = None, unit: str = "") -> float:
    """``value`` if it is a number (never a bool) within the bounds given (NaN is within none), else
    ``ConfigError`` naming them (``unit``: what the number counts, e.g. ``"seconds"``)."""
    ok = (not isinstance(value, bool) and isinstance(value, int | float)
          and (ge is None or ge <= value) and (le is None or value <= le))
    if not ok:
        kind = f"a number of {unit}" if unit else "a number"
        bound = (f" in [{ge}, {le}]" if ge is not None and le is not None
                 else f" >= {ge}" if ge is not None else f" <= {le}" if le is not None else "")
        raise ConfigError(f"{name} must be {kind}{bound}, got {value!r}")
    return value  # type: ignore[no-any-return]


def string(name: str, value: Any, le: int | None = None) -> str:
    """``value`` if it is a string UTF-8 can carry, of at most ``le`` characters (any, where ``le`` is not given),
    else ``ConfigError`` naming ``name`` and the reason: the one check of a string the library hands to a database
    as it is (a filter's strings, a query). A lone surrogate (U+D800 to U+DFFF) is what a JSON ``"\\ud800"``
    escape or an undecodable byte of a command line (``surrogateescape``) becomes, and is no Unicode text."""
    if not isinstance(value, str):
        raise ConfigError(f"{name} must be a string, got {type(value).__name__}")
    if le is not None and len(value) > le:
        raise ConfigError(f"{name} is {len(value)} characters long, over the limit of {le}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ConfigError(f"{name} holds U+{ord(value[exc.start]):04X} at character {exc.start}, a lone surrogate, "
                          "which is not Unicode text") from None
    return value


def seconds(name: str, value: Any, le: float = MAX_WAIT_S) -> float:
    """``value`` as seconds if it is a number in ``[0, le]`` (never a bool, never NaN), else ``ConfigError``
    naming the bound."""
    return float(number(name, value, 0, le, unit="seconds"))


_KEY = "setting"  # where a dataclass field keeps its Setting


@dataclass(frozen=True)
class Setting:
    """What validation, the HTTP schema and the CLI derive from one setting.

    ``help``: the CLI's help; ``doc``: the HTTP schema's description (``None``: none); in both ``{choices}`` stands
    for the valid names. ``choices``: the valid values, or a function listing them (a registry's names; ``None``
    is valid too where it is the default). ``ge`` / ``le``: bounds everywhere (a bounded setting must be a number
    of its type, never a bool; a whole number is at most ``MAX_WHOLE`` where ``le`` is not given: :meth:`upper`);
    ``per_request``: the upper bound of one HTTP request. ``label``: the setting's name in messages, where it
    differs from ``name``; ``invalid``: the message for a value outside them (``{name}``, ``{value}``, ``{choices}``,
    ``{ge}``, ``{le}``), where it differs from the usual one. ``parse``: turns the value into what the library uses,
    raising ``ConfigError`` (filters). ``name`` and ``kind`` (the declared type) are filled in by
    :func:`declared`.
    """

    default: Any
    help: str
    doc: str | None = None
    choices: tuple[str, ...] | Callable[[], Iterable[str]] = ()
    ge: float | None = None
    le: float | None = None
    per_request: int | None = None
    label: str | None = None
    invalid: str | None = None
    parse: Callable[[Any], Any] | None = None
    name: str = ""
    kind: Any = None

    def field(self) -> Any:
        """This setting as a dataclass field: its default, and itself in the field's metadata for
        :func:`declared`."""
        return dataclasses.field(default=self.default, metadata={_KEY: self})

    def names(self) -> tuple[str, ...]:
        """The valid names (none: any value of the setting's type)."""
        return tuple(self.choices()) if callable(self.choices) else self.choices

    def text(self, template: str) -> str:
        """``template`` (``help`` or ``doc``) with the valid names in place of ``{choices}``."""
        return template.format(choices=", ".join(self.names()))

    def check(self, value: Any) -> Any:
        """``value`` if this setting takes it (parsed, where the setting has a parser), else ``ConfigError``."""
        if self.parse is not None:
            return self.parse(value)
        if value is None and self.default is None:
            return None
        try:
            if self.choices:
                if value not in self.names():
                    names = self.names()
                    raise ConfigError(f"unknown {self.label or self.name} {value!r}: "
                                      + (f"use {names[0]}" if len(names) == 1 else f"use one of {', '.join(names)}"))
            elif self.number() is int:  # a whole number is bounded whether or not its declaration says so
                whole(self.label or self.name, value, int(self.ge if self.ge is not None else -MAX_WHOLE - 1),
                      int(self.le if self.le is not None else MAX_WHOLE))
            elif self.ge is not None or self.le is not None:
                number(self.label or self.name, value, self.ge, self.le)
        except ConfigError:
            if self.invalid is None:
                raise
            raise ConfigError(self.invalid.format(name=self.name, value=value, choices=", ".join(self.names()),
                                                  ge=self.ge, le=self.upper())) from None
        return value

    def upper(self) -> float | None:
        """The upper bound everywhere: ``le``, else ``MAX_WHOLE`` for a whole number (none for other numbers)."""
        if self.le is None and self.number() is int:
            return MAX_WHOLE
        return self.le

    def request_upper(self) -> float | None:
        """The upper bound of one HTTP request: ``per_request`` where it is given, else :meth:`upper`."""
        return self.per_request if self.per_request is not None else self.upper()

    def number(self) -> type:
        """The setting's type without ``None`` (``int`` for ``int | None``)."""
        args = [a for a in typing.get_args(self.kind) if a is not type(None)]
        return args[0] if len(args) == 1 else self.kind  # type: ignore[no-any-return]


def declared(cls: type) -> dict[str, Setting]:
    """The settings ``cls`` declares, by name in declaration order, each with its ``name`` and ``kind`` filled in:
    a dataclass's fields made by :meth:`Setting.field`, or a ``TypedDict``'s keys annotated
    ``Annotated[kind, Setting(...)]`` (the others are left out)."""
    kinds = typing.get_type_hints(cls)
    if dataclasses.is_dataclass(cls):
        found = {f.name: f.metadata.get(_KEY) for f in dataclasses.fields(cls)}
    else:
        extras = typing.get_type_hints(cls, include_extras=True)
        found = {name: next((m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Setting)), None)
                 for name, hint in extras.items()}
    return {name: dataclasses.replace(s, name=name, kind=kinds[name]) for name, s in found.items()
            if s is not None}
