"""The option groups the commands share, declared once: the index, the encoder and splitter options and what an
ingest reads as ``Annotated`` types, the fusion options as a decorator built from
:class:`~searchapp.query.fusion.Fusion`'s declared settings (``fusion.SETTINGS``), so a new fusion setting appears
in every command (and in the HTTP schema) without being written again; the search options likewise from their
declaration (``query/options.py``). Only the commands import this module: the root's help and the edge
(``common.py``) do not pay for it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from searchapp.encode.device import DEVICES
from searchapp.encode.pooling import pooling_names
from searchapp.encode.precision import PRECISIONS
from searchapp.query.fusion import SETTINGS
from searchapp.query.options import OPTIONS
from searchapp.setting import MAX_FILE_MB, MAX_THREADS, MAX_WAIT_S, Setting
from searchapp.types import MAX_WHOLE

DEFAULT_INDEX = ".searchapp"


def _index_option(ctx: typer.Context, param: typer.CallbackParam, value: str) -> str:
    # Only the default is looked for: an index named on the command line or in SEARCHAPP_INDEX is that one.
    source = ctx.get_parameter_source(param.name or "index")
    return nearest_index(value) if source is None or source.name == "DEFAULT" else value


def nearest_index(index: str) -> str:
    """``index`` as given, except the default: the nearest ``.searchapp`` folder in the working folder or one
    above it (a command run from a subfolder of an indexed folder finds its index, as git finds a repository,
    instead of advising a second one), else ``.searchapp`` here."""
    if index != DEFAULT_INDEX:
        return index
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / DEFAULT_INDEX).is_dir():
            return DEFAULT_INDEX if folder == here else str(folder / DEFAULT_INDEX)
    return index

IndexOpt = Annotated[
    str,
    typer.Option(
        "--index", "-i", envvar="SEARCHAPP_INDEX", show_default=True, callback=_index_option,
        help="Index folder (by default the nearest .searchapp here or in a folder above, as git finds its "
        "repository), or a PostgreSQL URL: postgresql+psycopg://USER@HOST/DB?schema=NAME (docs/postgres.md).",
    ),
]
WaitOpt = Annotated[
    float,
    typer.Option("--wait", min=0, max=MAX_WAIT_S, metavar="SECONDS",
                 help="Wait up to this long for another process writing to the index, instead of failing at once."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout (see docs/cli.md).")]

# The panels --help groups an ingest's (or a watch's) options in, so that its two dozen read as four groups.
READ_PANEL = "What to read"
MODEL_PANEL = "Model and passages (fixed when an index is made)"
RUN_PANEL = "Where and how fast"
# The hybrid ranking's settings (query/fusion.py), apart from what a search asks: tuned once, by `searchapp tune`.
RANKING_PANEL = "Advanced ranking (default: the index's; searchapp tune chooses them)"

# The encoder (fixed when an index is created).
ModelOpt = Annotated[
    str | None,
    typer.Option(help="Model name or local model folder (default all-MiniLM-L6-v2; an index keeps the one it was "
                 "created with).", rich_help_panel=MODEL_PANEL),
]
PoolingOpt = Annotated[
    str | None,
    typer.Option(help=f"Pooling strategy: {', '.join(pooling_names())} (default mean; an index keeps the one it was "
                 "created with).", rich_help_panel=MODEL_PANEL),
]
PoolingParamOpt = Annotated[
    list[str] | None,
    typer.Option(help="Pooling parameter KEY=VALUE, e.g. layer_start=4 or layers=-2,-1 (repeatable).",
        rich_help_panel=MODEL_PANEL),
]
PrecisionOpt = Annotated[
    str | None,
    typer.Option(help=f"Forward-pass precision: {', '.join(PRECISIONS)} (auto: bf16 where the CPU has bf16 "
                 "instructions, else int8 where it has AVX2, else fp32; bf16 or fp16 on a GPU; fp16 on a GPU only, "
                 "int8 on a CPU only; default: the index's, else auto).", rich_help_panel=MODEL_PANEL),
]
DeviceOpt = Annotated[
    str,
    typer.Option(help=f"Where the model runs: {', '.join(DEVICES)} (auto: a CUDA GPU where one is usable, else the "
                 "CPU).", rich_help_panel=RUN_PANEL),
]
# The splitter (fixed when an index is created).
MaxTokensOpt = Annotated[
    int | None, typer.Option(max=MAX_WHOLE, help="Passage budget in word pieces, special tokens included (new index).",
        rich_help_panel=MODEL_PANEL)
]
OverlapOpt = Annotated[
    int | None, typer.Option(max=MAX_WHOLE, help="Word pieces repeated between passages (new index).",
        rich_help_panel=MODEL_PANEL)
]
# What an ingest (or a watch) reads, and how.
IncludeOpt = Annotated[list[str] | None, typer.Option(help="Glob of files to include (repeatable).",
    rich_help_panel=READ_PANEL)]
ExcludeOpt = Annotated[list[str] | None, typer.Option(help="Glob of files to exclude (repeatable).",
    rich_help_panel=READ_PANEL)]
BatchSizeOpt = Annotated[int, typer.Option(min=1, max=MAX_WHOLE, help="Passages per forward pass.",
    rich_help_panel=RUN_PANEL)]
MaxFileMbOpt = Annotated[
    float, typer.Option(min=0.001, max=MAX_FILE_MB, help="Skip files larger than this, before reading them (MB).",
        rich_help_panel=READ_PANEL)
]
FollowLinksOpt = Annotated[bool, typer.Option("--follow-links", help="Also index links to files outside the folder.",
    rich_help_panel=READ_PANEL)]
NoIgnoreOpt = Annotated[bool, typer.Option(
    "--no-ignore", help="Also index what .gitignore, .ignore and git's excludes files leave out.",
        rich_help_panel=READ_PANEL)]
ThreadsOpt = Annotated[
    int | None, typer.Option(min=1, max=MAX_THREADS, help="CPU threads for the model (default: all cores).",
        rich_help_panel=RUN_PANEL)
]



def _fusion_option(name: str) -> str:
    return "--fusion" if name == "method" else "--" + name.replace("_", "-")


def fusion_options(only: tuple[str, ...] | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command one option per fusion setting (``--fusion``, ``--norm``, ``--alpha``, ...; ``only`` those
    named); the command receives them as ``fusion: dict[str, Any]`` (``None`` where not given)."""
    chosen = [s for name, s in SETTINGS.items() if only is None or name in only]

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn, eval_str=True)
        kept = [p for p in sig.parameters.values() if p.name != "fusion"]
        added = [
            inspect.Parameter(
                f"fusion_{s.name}", inspect.Parameter.KEYWORD_ONLY, default=None,
                annotation=Annotated[
                    s.kind | None,
                    typer.Option(_fusion_option(s.name), help=f"{s.text(s.help)} (default: the index's).",
                                 min=s.ge, max=s.upper(), rich_help_panel=RANKING_PANEL),
                ],
            )
            for s in chosen
        ]

        @functools.wraps(fn)
        def command(*args: Any, **kwargs: Any) -> Any:
            fusion = {s.name: kwargs.pop(f"fusion_{s.name}") for s in chosen}
            return fn(*args, fusion=fusion, **kwargs)

        command.__signature__ = sig.replace(parameters=kept + added)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in kept + added}
        return command

    return deco


def search_options(
    own: Mapping[str, tuple[str, ...]] | None = None, short: Mapping[str, str] | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command one option per search option (``query/options.py``: ``--k``, ``--mode``, ``--explain``,
    ``--min-score``, ...) with its help, default and bounds (``short``: a one-letter flag too, by option name). A
    search option named in ``own`` is the command's own parameters instead (filters: ``--filter``,
    ``--path-prefix``, ``--path-glob``), moved into its place: all stand in declaration order where the first of
    the command's own ones was. The command receives the generated ones as ``options: dict[str, Any]``."""
    own, short = own or {}, short or {}
    chosen = [opt for name, opt in OPTIONS.items() if name not in own]

    def option(opt: Setting) -> inspect.Parameter:
        flags = ["--" + opt.name.replace("_", "-"), *([short[opt.name]] if opt.name in short else [])]
        return inspect.Parameter(
            opt.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=opt.default,
            annotation=Annotated[opt.kind, typer.Option(*flags, help=opt.text(opt.help), min=opt.ge, max=opt.upper())],
        )

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn, eval_str=True)
        names = list(sig.parameters)
        theirs = [p for group in own.values() for p in group]
        kept = [p for p in sig.parameters.values() if p.name != "options" and p.name not in theirs]
        block = [sig.parameters[p] if name in own else option(OPTIONS[name])
                 for name in OPTIONS for p in own.get(name, (name,))]
        first = min((names.index(p) for p in theirs), default=None)
        if first is None:  # before the keyword-only parameters
            at = next((i for i, p in enumerate(kept) if p.kind is inspect.Parameter.KEYWORD_ONLY), len(kept))
        else:
            at = sum(1 for p in kept if names.index(p.name) < first)
        ordered = kept[:at] + block + kept[at:]

        @functools.wraps(fn)
        def command(*args: Any, **kwargs: Any) -> Any:
            options = {opt.name: kwargs.pop(opt.name) for opt in chosen}
            return fn(*args, options=options, **kwargs)

        command.__signature__ = sig.replace(parameters=ordered)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in ordered}
        return command

    return deco
