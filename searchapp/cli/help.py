"""How ``--help`` shows an option's value, and how a usage error reads, so that both read well at 80 columns.

A flag shows no value (Typer 0.29 writes ``<bool>`` beside every flag), a value its kind in capitals (``N``,
``NUMBER``, ``TEXT``, ``PATH``), its choices or the option's own metavar, and a range only where it is one a
person would choose within (not a machine word's, ``[x<=9223372036854775807]``, which is a bound the library
checks, not advice). A usage error (an unknown option, a value out of its range) is one ``error:`` line naming
the command's help, as every other error is.

The rules are applied once, to Typer's option classes and its error printer, when the command line is built
(:func:`apply`); ``tests/integration/test_cli_help.py`` fails if a Typer release changes what they override.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, get_args, get_origin

import typer
from typer import core

from searchapp.display import printable

# The value names shown for an option's Python type (an unknown one: VALUE).
_KINDS: dict[object, str] = {int: "N", float: "NUMBER", str: "TEXT", Path: "PATH"}


def value_name(param: Any) -> str | None:
    """What ``--help`` shows of ``param``'s value (a Typer option or argument): nothing for a flag, else its
    metavar or its kind (a repeatable option's, its items')."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return None
    if param.metavar is not None:
        return str(param.metavar)
    described = param.type_descriptor
    if described.is_choice:
        return "|".join(str(getattr(c, "value", c)) for c in described.choices)
    kind = described.annotation
    if get_origin(kind) is list:
        kind = get_args(kind)[0]
    return _KINDS.get(kind, "VALUE")


def range_text(low: float | None, high: float | None) -> str | None:
    """A range worth showing (``0<=x<=64``), or ``None`` for none or a machine limit's."""
    from searchapp.setting import MAX_C_INT  # here: the root's help shows no range, and need not import it

    # A range whose upper bound is at least a C int's is a machine limit, left out of the help.
    if high is not None and high >= MAX_C_INT:
        high = None
    if low is None and high is None:
        return None
    if high is None:
        return f"x>={low}"
    return f"{low}<=x<={high}" if low is not None else f"x<={high}"


def examples(*lines: str) -> str:
    """A command's ``epilog``: example command lines, one a line (each ``command  # what it does``)."""
    return "Examples:\n\n" + "\n\n".join(f"  {line}" for line in lines)


class _Patch(importlib.abc.MetaPathFinder):
    """Runs ``patch`` on module ``name`` as soon as it is imported: Typer imports its rich printer (about 0.3 s
    of imports) only to print help or an error, and a command that prints neither must not pay for it."""

    def __init__(self, name: str, patch: Any) -> None:
        self.name, self.patch = name, patch

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader, patch = spec.loader, self.patch
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            patch(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _when_imported(name: str, patch: Any) -> None:
    if name in sys.modules:
        patch(sys.modules[name])
    elif not any(isinstance(f, _Patch) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, _Patch(name, patch))


def apply() -> None:
    """Make Typer's options show their values by these rules (idempotent)."""

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        return value_name(self)

    def number_range(self: Any) -> str | None:
        return range_text(getattr(self, "min", None), getattr(self, "max", None))

    def usage_error(error: Any) -> None:
        # One line, as every other error of the command line (a boxed panel was a second style).
        ctx = getattr(error, "ctx", None)
        hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
        typer.echo(printable(f"error: {error.format_message()}{hint}"), err=True)

    _when_imported("typer.rich_utils", lambda module: setattr(module, "rich_format_error", usage_error))
    core.TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]
    core.TyperArgument.display_type_rich = display_type_rich  # type: ignore[method-assign]
    core.TyperOption._get_number_range_help_str = number_range  # type: ignore[method-assign]
