"""What the commands share: error handling at the edge, JSON output, and the option groups declared once.

An option group is declared here once and used by every command that takes it: the encoder and splitter options
as ``Annotated`` types, the fusion options as a decorator built from :class:`~searchapp.query.fusion.Fusion`'s
declared settings (``fusion.SETTINGS``), so a new fusion setting appears in every command (and in the HTTP
schema) without being written again; the search options likewise from their declaration (``query/options.py``).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import inspect
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from searchapp.display import printable
from searchapp.encode.device import DEVICES
from searchapp.encode.pooling import pooling_names
from searchapp.encode.precision import PRECISIONS
from searchapp.errors import SearchappError
from searchapp.query.fusion import SETTINGS
from searchapp.query.options import OPTIONS
from searchapp.setting import MAX_FILE_MB, MAX_THREADS, MAX_WAIT_S, Setting
from searchapp.types import MAX_WHOLE

DEFAULT_INDEX = ".searchapp"

# The exit statuses, grep's and ripgrep's (docs/cli.md, "Exit status"), declared here once for every command.
EXIT_OK = 0  # the command did its work (a query: found at least one hit)
EXIT_NO_MATCH = 1  # it ran and nothing matched: a query found no hit, `remove` named nothing indexed
EXIT_ERROR = 2  # an error: a SearchappError, a usage error (Click's own status), output that cannot be written


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


def say(text: str, err: bool = False) -> None:
    """Print one line for a human (on stderr with ``err``), through :func:`printable`; JSON goes through
    :func:`emit_json`, exact."""
    typer.echo(printable(text), err=err)


def color_stdout() -> bool:
    """Whether stdout is a terminal that may be styled (not piped or redirected, and no ``NO_COLOR`` asked)."""
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


_BOLD, _RESET = "\x1b[1;33m", "\x1b[0m"  # bold yellow, and back


TAB_WIDTH = 8


def styled(pieces: Iterable[tuple[str, bool]], color: bool, layout: bool = False) -> str:
    """One line of untrusted text with some pieces marked: every piece through :func:`printable` (its own escape
    sequences shown, not obeyed) and its runs of white space made one space, or with ``layout`` (a line of a
    document, shown as it stands) its spaces kept and its tabs turned to spaces up to the next tab stop; the marked
    ones bold when ``color``, and only then (the only escape sequences in the line are these, added after
    escaping)."""
    out = []
    width = 0
    for text, marked in pieces:
        if layout:
            text = _untabbed(text, width)
            width += len(text)
        else:
            text = re.sub(r"\s+", " ", text)
        safe = printable(text)
        out.append(f"{_BOLD}{safe}{_RESET}" if marked and color and safe else safe)
    return "".join(out)


def _untabbed(text: str, column: int) -> str:
    """``text``, which starts ``column`` characters into its line, with each tab as spaces to the next tab stop."""
    if "\t" not in text:
        return text
    out: list[str] = []
    for ch in text:
        if ch == "\t":
            ch = " " * (TAB_WIDTH - (column % TAB_WIDTH))
        out.append(ch)
        column += len(ch)
    return "".join(out)


def say_styled(pieces: Iterable[tuple[str, bool]], indent: int = 0, layout: bool = False) -> None:
    """Print one line of :func:`styled` pieces on stdout, bold only on a terminal, after ``indent`` spaces."""
    typer.echo(" " * indent + styled(pieces, color_stdout(), layout))


@contextmanager
def errors() -> Iterator[None]:
    """Expected failures end as one line on stderr and exit status :data:`EXIT_ERROR`, never a traceback."""
    try:
        yield
    except SearchappError as exc:
        say(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_ERROR) from None


class Stdout:
    """``sys.stdout`` as the commands write to it (:func:`run`): every write goes to the real one, and a failed
    write or flush is remembered, so that the edge tells a failing output (a full disk, a closed pipe, no stdout
    at all: ``>&-``) from any other error. Without a real stdout, a write fails as on a closed descriptor."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.failure: OSError | None = None

    def write(self, text: str) -> int:
        return int(self._call("write", text))

    def flush(self) -> None:
        self._call("flush")

    def isatty(self) -> bool:
        return self.stream is not None and bool(self.stream.isatty())

    def _call(self, name: str, *args: Any) -> Any:
        try:
            if self.stream is None:
                raise OSError(errno.EBADF, "stdout is closed")
            return getattr(self.stream, name)(*args)
        except OSError as exc:
            self.failure = exc
            raise

    def __getattr__(self, name: str) -> Any:
        if self.stream is None:
            raise AttributeError(name)
        return getattr(self.stream, name)


class Stderr:
    """``sys.stderr`` as the commands write to it (:func:`run`): a side channel. Progress, stage lines and warnings
    that cannot be written (a full disk, a reader that left, no stderr at all: ``2>&-``) are dropped from the first
    failure on, remembered in :attr:`failure`, and never stop, undo or fail the work: the exit status is the
    work's (docs/cli.md, "Exit status")."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.failure: Exception | None = None if stream is not None else OSError(errno.EBADF, "stderr is closed")

    def write(self, text: str) -> int:
        self._call("write", text)
        return len(text)

    def flush(self) -> None:
        self._call("flush")

    def isatty(self) -> bool:
        return self.failure is None and bool(self._call("isatty"))

    def _call(self, name: str, *args: Any) -> Any:
        if self.failure is not None:
            return None
        try:
            return getattr(self.stream, name)(*args)
        except (OSError, ValueError) as exc:  # ValueError: a stream closed under us
            self.failure = exc
            return None

    def __getattr__(self, name: str) -> Any:
        if self.stream is None:
            raise AttributeError(name)
        return getattr(self.stream, name)


# When the command began (time.monotonic()): the process's start where the ``searchapp`` entry point runs it
# (:func:`run`), else when the command was invoked (a test's runner, an app embedding this one).
_began = {"at": time.monotonic(), "process": False}


def begin() -> None:
    """Mark the start of a command (the app's root callback, before the command runs)."""
    if not _began["process"]:
        _began["at"] = time.monotonic()


def command_seconds() -> float:
    """Seconds since the command began (:data:`_began`): what a summary reports as the command's time."""
    return time.monotonic() - float(_began["at"])


def _process_age() -> float | None:
    """Seconds since this process started (Linux: its start time in ``/proc``), ``None`` where unknown."""
    try:
        with open("/proc/self/stat", "rb") as f:
            started = int(f.read().rsplit(b")", 1)[1].split()[19])  # field 22: start time in clock ticks
        with open("/proc/uptime", "rb") as f:
            up = float(f.read().split()[0])
        return max(0.0, up - started / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def reserve_standard_descriptors() -> None:
    """Point each of descriptors 0-2 that is closed (``2>&-``, a daemon started without them) at /dev/null, so
    that no file the command opens (a database, a vector file) takes its number and receives what a library
    writes to "stderr"."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            with contextlib.suppress(OSError):
                opened = os.open(os.devnull, os.O_RDWR)
                if opened != fd:  # a lower one was free too: it is filled in its own turn
                    os.dup2(opened, fd)
                    os.close(opened)


def run(app: Callable[[], Any]) -> None:
    """Run the command line ``app`` with output failures as one line: results that cannot be written (stdout
    full, closed, or a broken pipe) end the command with exit status :data:`EXIT_ERROR`, as grep's write errors,
    the same for every command, and with ``error: cannot write the output: <why>`` on stderr, except for a
    reader that left (``| head``), which chose to stop reading: quiet, but the output is incomplete
    (docs/cli.md). Never returns."""
    age = _process_age()
    _began.update(at=time.monotonic() - (age or 0.0), process=age is not None)
    out = Stdout(sys.stdout)
    sys.stdout = out  # type: ignore[assignment]
    err = Stderr(sys.stderr)
    sys.stderr = err  # type: ignore[assignment]
    code: Any = EXIT_OK
    try:
        try:
            app()
        except SystemExit as exc:
            code = exc.code
        out.flush()
    except OSError:
        if out.failure is None:
            raise
    # Click ends a command whose reader left with its own status (1): an output failure is seen here, whatever
    # the command's status was.
    if out.failure is not None:
        if out.failure.errno != errno.EPIPE:
            say(f"error: cannot write the output: {out.failure.strerror or out.failure}", err=True)
        if out.stream is not None:
            # The interpreter flushes stdout again at exit: pointed at /dev/null, that flush cannot fail anew.
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), out.stream.fileno())
            out.stream = None
        code = EXIT_ERROR
    sys.stdout = out.stream or sys.__stdout__  # type: ignore[assignment]
    sys.stderr = err.stream
    _began["process"] = False  # a later command in this process (an embedding app's) is timed from its own start
    raise SystemExit(code)


def emit_json(obj: Any) -> None:
    """``obj`` as indented JSON on stdout."""
    typer.echo(json.dumps(obj, ensure_ascii=False, indent=2))


def human_size(n: int) -> str:
    """Bytes for a human: ``"512 B"``, ``"1.5 KiB"``, ``"23.4 MiB"`` (binary units, as ``--max-file-mb``)."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def display_path(path: str) -> str:
    """``path`` relative to the working folder where it can be."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return path


def shown_key(path: str, source: str) -> str:
    """A document as the tables show it: its source (``file`` or ``text``, so that a text cannot pass for a file)
    and its key: a file's path relative to the working folder where it can be, a text's id as it is."""
    return f"{source:<4}  {display_path(path) if source == 'file' else path}"


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
