"""What the commands share at the edge: error handling, exit statuses, stdout and stderr, JSON output. The option
groups they share are declared in ``options.py``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import typer

from searchapp.display import printable
from searchapp.errors import SearchappError

# The exit statuses, grep's and ripgrep's (docs/cli.md, "Exit status"), declared here once for every command.
EXIT_OK = 0  # the command did its work (a query: found at least one hit)
EXIT_NO_MATCH = 1  # it ran and nothing matched: a query found no hit, `remove` named nothing indexed
EXIT_ERROR = 2  # an error: a SearchappError, a usage error (Click's own status), output that cannot be written


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
        except Exception as exc:
            # A failure no error type names (a bug) shows its traceback and exits as an error: never with 1, which
            # says that nothing matched. An output failure is said below.
            if not (isinstance(exc, OSError) and out.failure is not None):
                sys.excepthook(type(exc), exc, exc.__traceback__)
            code = EXIT_ERROR
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


def place(line: int | None, page: int | None) -> str:
    """What follows a path to say where in the file: ``#page=N`` for a paged format's passage (PDF viewers' open
    parameter), else ``:line`` (as ``grep -n``: an editor's ``path:line``), else nothing."""
    if page is not None:
        return f"#page={page}"
    return f":{line}" if line is not None else ""


def shown_key(path: str, source: str) -> str:
    """A document as the tables show it: its source (``file`` or ``text``, so that a text cannot pass for a file)
    and its key: a file's path relative to the working folder where it can be, a text's id as it is."""
    return f"{source:<4}  {display_path(path) if source == 'file' else path}"
