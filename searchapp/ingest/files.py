"""The files an ingest reads: a folder walked (ignore files, include/exclude globs, what is skipped counted), a
scope of paths (a watcher's changed paths), and the one test of whether a path is at or under a folder."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from searchapp.errors import LoadError
from searchapp.ingest.formats.registry import format_for
from searchapp.ingest.ignore import Ignores
from searchapp.store.folder import OWN_FOLDERS


def is_under(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies under it, by their spelling: both must be spelled alike (absolute,
    normalised; real paths or not, as the caller chose). Nothing is resolved here, so a link keeps whatever
    meaning the caller gave it; ``/a/bc`` is not under ``/a/b``."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def selected(relative: str, name: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether a file passes the include/exclude globs (tried on the relative POSIX path and on the name)."""

    def matches(pattern: str) -> bool:
        return fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(name, pattern)

    return (not include or any(map(matches, include))) and not any(map(matches, exclude))


def walk_picks(path: str, root: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether a walk of ``root`` would pick ``path`` (both absolute and real, ``path`` under ``root``) by its
    globs, had it existed: the root itself always, anything under it when :func:`selected`."""
    if path == root:
        return True
    relative = Path(os.path.relpath(path, root)).as_posix()
    return selected(relative, Path(path).name, include, exclude)


@dataclass(frozen=True)
class Found:
    """A file to load."""

    path: Path


@dataclass(frozen=True)
class Skipped:
    """A file or folder left out: counted by ``reason`` (``hidden``: a hidden folder counts once, unlisted;
    ``ignored``; ``unsupported``; ``excluded``), ``where`` it is (a folder's path ends in a separator), or one,
    ``path``, left out for a ``reason`` to report (a link to a file outside the folder)."""

    reason: str
    path: str | None = None
    where: str | None = None

    @property
    def n(self) -> int:
        """How many files or folders it counts: one."""
        return 1


@dataclass(frozen=True)
class Failed:
    """A folder that could not be listed (its files are not walked; what is indexed under it is kept)."""

    path: str
    reason: str


@dataclass(frozen=True)
class Warned:
    """An ignore file read in part."""

    path: str
    warning: str


Walked = Found | Skipped | Failed | Warned


def walk(
    root: Path,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    follow_links: bool = False,
    within: Collection[str] | None = None,
    index_folder: str | None = None,
    ignore_rules: bool = True,
) -> Iterator[Walked]:
    """What a walk of ``root`` meets, in order: the loadable files (:class:`Found`, absolute, under ``root``
    resolved to its real path, so a folder reached through a link or under another name is the same folder), in
    sorted order, and what it leaves out (:class:`Skipped`), cannot list (:class:`Failed`) or warns of
    (:class:`Warned`).

    Hidden files and directories (name starting with ``"."``) are skipped; symlinked directories are not
    followed (so no symlink loops); a symlinked file is found when its target lies inside ``root``, or any
    target with ``follow_links`` (a link to ``/etc/passwd`` in a shared folder must not be indexed and served);
    one left out is a ``Skipped`` with its path. ``include``/``exclude`` are fnmatch patterns tried against the
    POSIX path relative to ``root`` and against the bare file name: a file is kept when it matches some include
    (or there is none) and no exclude. A file ``root`` is found, unfiltered, when a format claims it. Raises
    :class:`LoadError` when ``root`` does not exist.

    ``ignore_rules``: files and folders that the ignore files leave out (``.gitignore`` at every level, ``.ignore``,
    the repository's ``info/exclude``, git's global excludes: ``ingest/ignore.py``) are skipped as ``ignored`` (an
    ignored folder once: it is not listed, so ``node_modules/`` costs nothing). A file ``root`` is found whatever
    they say.

    ``within``: absolute paths under the real ``root`` (files or folders, existing or not); only the files at or
    under one of them are found, by the same rules, and only the folders leading to them are listed (a
    watcher's changed paths, ``ingest/watch.py``).

    ``index_folder``: the folder of the index being written, which holds no documents: never walked (nor counted,
    hidden or not) when it lies under ``root``; when it is ``root`` itself, its own folders are not walked and the
    files there that no format claims are not counted as unsupported (the index's database, vectors and lock).
    """
    base = Path(os.path.realpath(root))
    scope = None if within is None else Scope(within)
    if base.is_file():
        if format_for(base) is not None:
            yield Found(base)
        return
    if not base.is_dir():
        raise LoadError(str(root), "no such file or directory")
    # os.walk and the ignore files report through callbacks: what they report is handed on at the next step.
    pending: list[Walked] = []

    def failed(exc: OSError) -> None:
        pending.append(Failed(os.path.abspath(exc.filename or base), f"cannot read folder: {exc.strerror or exc}"))

    own = None if index_folder is None else os.path.realpath(index_folder)
    ignores = Ignores(str(base), lambda path, warning: pending.append(Warned(path, warning))) if ignore_rules else None
    for dirpath, dirnames, filenames in _folders(str(base), failed):
        yield from pending
        pending.clear()
        # Pruning in place is how os.walk is told not to descend.
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) != own
                       and not (dirpath == own and d in OWN_FOLDERS)]
        for d in dirnames:
            if d.startswith("."):
                yield Skipped("hidden", where=os.path.join(dirpath, d, ""))
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")
                             and (scope is None or scope.leads_to(os.path.join(dirpath, d))))
        if ignores is not None:
            ignores.enter(dirpath, filenames)
            yield from pending
            pending.clear()
            kept = [d for d in dirnames if not ignores.ignored(os.path.join(dirpath, d), is_dir=True)]
            for d in sorted(set(dirnames) - set(kept)):
                yield Skipped("ignored", where=os.path.join(dirpath, d, ""))
            dirnames[:] = kept
        directory = Path(dirpath)
        for filename in sorted(filenames):
            path = directory / filename
            if scope is not None and not scope.covers(str(path)):
                continue
            if filename.startswith("."):
                yield Skipped("hidden", where=str(path))
                continue
            if ignores is not None and ignores.ignored(os.path.join(dirpath, filename), is_dir=False):
                yield Skipped("ignored", where=str(path))
                continue
            if format_for(path) is None:
                if dirpath != own:  # the index's database, vectors and lock, where the index is the root
                    yield Skipped("unsupported", where=str(path))
                continue
            if not selected(path.relative_to(base).as_posix(), filename, include, exclude):
                yield Skipped("excluded", where=str(path))
                continue
            if not follow_links and path.is_symlink() and not is_under(os.path.realpath(path), str(base)):
                yield Skipped("a link to a file outside the folder (--follow-links to index it)", path=str(path))
                continue
            yield Found(path)
    yield from pending


def _folders(top: str, onerror: Callable[[OSError], None]) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top, followlinks=False, onerror=onerror)``'s folders, top-down in the same order, with a stack
    instead of recursion: os.walk recurses a level a folder before Python 3.12, and a folder about a thousand deep
    anywhere under the path raised RecursionError and ended the ingest. The caller prunes ``dirnames`` in place."""
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as exc:
            onerror(exc)
            continue
        dirnames, filenames = [], []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirnames if is_dir else filenames).append(entry.name)
        yield folder, dirnames, filenames
        # Links to folders are listed but not entered, as os.walk without followlinks; the first folder next.
        stack.extend(p for p in (os.path.join(folder, d) for d in reversed(dirnames)) if not os.path.islink(p))


def found(items: Iterable[Walked]) -> list[Path]:
    """The files of a walk's items (what a caller that reports nothing wants)."""
    return [item.path for item in items if isinstance(item, Found)]


class Scope:
    """Some absolute paths of a tree: which folders lead to them, and which paths they cover (a path at or under
    one of them). A path is looked up by its folders in a set, not tried against each scope path with
    :func:`is_under`: a watcher's burst can name thousands of paths, and every file walked is asked."""

    def __init__(self, paths: Collection[str]) -> None:
        self.paths = {os.path.normpath(p) for p in paths}
        self.ancestors = {str(parent) for p in self.paths for parent in Path(p).parents}

    def covers(self, path: str) -> bool:
        return path in self.paths or any(str(parent) in self.paths for parent in Path(path).parents)

    def leads_to(self, folder: str) -> bool:
        return folder in self.ancestors or self.covers(folder)
