"""Ignore rules as git applies them: which files and folders of a folder being ingested its ignore files leave out.

Read, without running git (it may be absent): the ``.gitignore`` and ``.ignore`` files of every folder walked
(patterns relative to the folder holding the file; ``.ignore``, ripgrep's, decides before the ``.gitignore`` of the
same folder), those of the folders above the root up to the top of the git repository the root lies in, that
repository's ``info/exclude``, and the global excludes file (``core.excludesFile`` in git's config files, else
``$XDG_CONFIG_HOME/git/ignore`` or ``~/.config/git/ignore``). A deeper folder's file decides before a shallower
one's, then ``info/exclude``, then the global file; within one file the last matching pattern decides. A folder
an ignore file leaves out is not entered, so nothing under it can be re-included, as git does. Lines and patterns
are read as git reads them, byte for byte (``ingest/wildmatch.py``: negations, directory-only and anchored
patterns, ``**``, brackets and POSIX classes, escapes, lines ended by ``\n`` alone); the walk leaves out exactly
what ``git ls-files -o --exclude-standard`` does (tests/integration/test_ignore_parity.py). ``.gitignore`` files
apply outside a git repository too (a folder copied out of one keeps its rules). The folder being ingested is read
even where the rules above it ignore it (named explicitly, as ripgrep reads a path it is given): those rules are
then not used.

Ignore files are untrusted text (a downloaded repository's): each is read up to :data:`MAX_FILE_BYTES` (the rest
is not used, said in one warning), one walk compiles at most :data:`MAX_PATTERNS` patterns in all, a pattern longer
than any path (:data:`MAX_PATTERN_CHARS` bytes) is dropped, and patterns are matched by RE2 sets
(``ingest/ignore_sets.py``): automata, linear in the path whatever the pattern (Python's backtracking ``re`` takes
minutes on ``*a*a*a*a*b`` against a long name), compiled within RE2's memory bound and kept between walks (a
watcher walks at every change). A path is decided by walking its folders once: each folder's own rules and verdict
are kept, so a watcher's event deep in a tree costs one decision, its levels tried each on the path's last name
and, only where a pattern could match it, its path.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

from searchapp.ingest.ignore_sets import MAX_PATTERN_CHARS, Compiled, compiled

__all__ = ["IGNORE_FILES", "MAX_FILE_BYTES", "MAX_PATTERNS", "MAX_PATTERN_CHARS", "Chain", "Ignores", "Level",
           "Rules", "config_value", "decide", "excludes_file", "ignore_scope", "read_bounded", "repository"]

# The ignore files of a folder, in the order they decide (ripgrep gives .ignore precedence over .gitignore).
IGNORE_FILES = (".ignore", ".gitignore")
# A repository's own excludes, relative to its git folder.
INFO_EXCLUDE = ("info", "exclude")
# The most of one ignore file (or git config file) read: a real one is a few kilobytes.
MAX_FILE_BYTES = 2**20
# The most patterns one walk compiles, over all its ignore files; a real repository has hundreds.
MAX_PATTERNS = 20_000

# (path of an ignore file, a warning about it): a file read in part, or not read.
Warn = Callable[[str, str], None]


@dataclass(frozen=True)
class Rules:
    """One ignore file's patterns, compiled (``ingest/ignore_sets.py``)."""

    source: str
    compiled: Compiled


@dataclass(frozen=True)
class Level:
    """The rules that speak of the paths under ``folder``, relative to it, in the order they decide."""

    folder: str
    rules: tuple[Rules, ...]

    @cached_property
    def start(self) -> int:
        """Where a path under ``folder`` (as bytes) starts to be its own: after the folder and its slash."""
        return len(_bytes(self.folder.rstrip(os.sep))) + 1

    @cached_property
    def slashes(self) -> int:
        """The slashes of a path under ``folder`` up to its own part."""
        return _bytes(self.folder.rstrip(os.sep)).count(b"/") + 1


@dataclass(frozen=True)
class Chain:
    """The levels in force in a folder, deepest first: its own (``None``: it has no ignore file), then those of the
    folder above (a walk's folders share the chains above them: a deep tree costs a node a folder)."""

    level: Level | None
    up: Chain | None

    def levels(self) -> Iterator[Level]:
        chain: Chain | None = self
        while chain is not None:
            if chain.level is not None:
                yield chain.level
            chain = chain.up


def _chain(levels: Sequence[Level]) -> Chain | None:
    chain = None
    for level in levels:
        chain = Chain(level, chain)
    return chain


def decide(levels: Sequence[Level] | Chain | None, path: str, is_dir: bool) -> bool:
    """The one rule, git's: whether ``path`` (absolute, under every level's folder) is ignored by ``levels``
    (outermost first, or a :class:`Chain`): the deepest level with a matching pattern decides, within it the first
    file (``.ignore`` before ``.gitignore``) with one, within that file its last matching pattern. The folders
    above ``path`` are not looked at: a walk does not enter an ignored folder (:meth:`Ignores.ignores` decides each
    one on the way)."""
    chain = _chain(levels) if isinstance(levels, Sequence) else levels
    if chain is None:
        return False
    raw = _bytes(path)
    name = raw[raw.rfind(b"/") + 1:]
    depth = raw.count(b"/")
    for level in chain.levels():
        for rules in level.rules:
            found = rules.compiled.decide(raw, level.start, name, depth - level.slashes, is_dir)
            if found is not None:
                return found
    return False


def _bytes(path: str) -> bytes:
    """``path`` as the bytes git matches (a name that is not UTF-8 as it is on disk), ``/``-separated."""
    return os.fsencode(path if os.sep == "/" else path.replace(os.sep, "/"))


def ignore_scope(path: str) -> str | None:
    """The folder whose files the ignore file at ``path`` speaks of (the folder holding a ``.gitignore``, the
    repository's top for its ``.git/info/exclude``), or ``None`` when ``path`` is no ignore file."""
    folder, name = os.path.split(path)
    if name in IGNORE_FILES:
        return folder
    parts = path.split(os.sep)
    if parts[-3:] == [".git", *INFO_EXCLUDE]:
        return os.sep.join(parts[:-3]) or os.sep
    return None


class Ignores:
    """The ignore rules in force under ``root`` (a real path): those above it, read when made, and each folder's
    own, read as a walk enters it (:meth:`enter`, :meth:`ignored`) or as a path is looked up (:meth:`ignores`).
    ``warn`` gets each ignore file read in part or not at all, once."""

    def __init__(self, root: str, warn: Warn | None = None) -> None:
        self.root = root
        self.warn = warn
        self.budget = MAX_PATTERNS
        self._own_levels: dict[str, Level | None] = {}  # each folder's own level, read once
        # Each folder entered or looked up: the levels in force in it, or None where it (or one above) is ignored.
        self._chains: dict[str, Chain | None] = {}
        self._current: Chain | None = None  # the levels in force in the folder a walk entered last
        top, git_dir = repository(root)
        base = top or root
        outer: list[Level] = []
        found = self._level(base, (excludes_file(git_dir, base),))
        outer += [found] if found else []
        if git_dir is not None:
            found = self._level(base, (os.path.join(git_dir, *INFO_EXCLUDE),))
            outer += [found] if found else []
        if top is not None:
            folder = top
            for part in os.path.relpath(root, top).split(os.sep) if root != top else ():
                found = self._level(folder, [os.path.join(folder, name) for name in IGNORE_FILES])
                outer += [found] if found else []
                folder = os.path.join(folder, part)
        if outer and root != base and decide(outer, root, True):
            outer = []  # named explicitly: read, and the rules that would leave it out are not used
        self.outer = outer
        self._above = _chain(outer)

    # -- a walk, folder by folder (os.walk's order: each folder after the one holding it) ------------------------

    def enter(self, folder: str, names: Collection[str]) -> None:
        """The walk lists ``folder`` (at or under the root, after each folder above it), whose entries are
        ``names``: its ignore files are read, and with those of the folders above it speak of its entries."""
        if folder not in self._own_levels:
            self._own_levels[folder] = self._level(folder, [os.path.join(folder, n) for n in IGNORE_FILES
                                                            if n in names])
        above = self._above if folder == self.root else self._chains.get(os.path.dirname(folder), self._above)
        self._current = self._chains[folder] = Chain(self._own_levels[folder], above)

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether the walk leaves out ``path``, an entry of the folder it entered last."""
        return self._current is not None and decide(self._current, path, is_dir)

    # -- a path looked up (a watcher's events), each folder on the way decided as a walk would ---------------------

    def ignores(self, path: str) -> bool:
        """Whether ``path`` (absolute, under the root; existing or not) or a folder between the root and it is
        ignored. The folders on the way are decided once each and kept: the next path under them costs its own
        decision only."""
        if path == self.root:
            return False
        folder = os.path.dirname(path)
        chain = self._chain_of(folder)
        return chain is None or decide(chain, path, os.path.isdir(path))

    def _chain_of(self, folder: str) -> Chain | None:
        """The levels in force in ``folder`` (at or under the root), ``None`` where it or a folder above is ignored:
        the nearest folder known, then each folder below it decided and kept, top down."""
        missing = []
        while folder not in self._chains and folder != self.root and os.path.dirname(folder) != folder:
            missing.append(folder)
            folder = os.path.dirname(folder)
        chain = self._chains[folder] if folder in self._chains else Chain(self._own(folder), self._above)
        self._chains[folder] = chain
        for below in reversed(missing):
            if chain is not None:
                chain = None if decide(chain, below, True) else Chain(self._own(below), chain)
            self._chains[below] = chain
        return chain

    def _own(self, folder: str) -> Level | None:
        if folder not in self._own_levels:
            self._own_levels[folder] = self._level(folder, [os.path.join(folder, n) for n in IGNORE_FILES])
        return self._own_levels[folder]

    # -- reading -------------------------------------------------------------------------------------------------

    def _level(self, folder: str, files: Sequence[str]) -> Level | None:
        rules = tuple(r for r in map(self._rules, files) if r is not None)
        return Level(folder, rules) if rules else None

    def _rules(self, path: str) -> Rules | None:
        """The patterns of the ignore file at ``path`` compiled (or kept from an earlier walk), within the walk's
        budget; ``None`` where there is no such file (or no pattern in it)."""
        notes: list[str] = []
        data = read_bytes(path, notes)
        if data is None:
            self._say(path, notes)
            return None
        made = compiled(data, self.budget, MAX_PATTERNS)
        self.budget -= made.used
        self._say(path, [*notes, *made.notes])
        return Rules(path, made) if made.parts else None

    def _say(self, path: str, notes: list[str]) -> None:
        if notes and self.warn is not None:
            self.warn(path, f"ignore file: {'; '.join(notes)}")


def read_bytes(path: str, notes: list[str], limit: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of the regular file at ``path``, its first ``limit`` at most (to the last whole line, said in
    ``notes``); ``None`` where there is none (or it cannot be read: said in ``notes``). Opened without blocking: a
    FIFO or device put in an ignore file's place is not read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        notes.append(f"cannot read: {exc.strerror or exc}")
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        notes.append(f"cannot read: {exc.strerror or exc}")
        return None
    finally:
        os.close(fd)
    if len(data) > limit:
        data = data[: data.rfind(b"\n", 0, limit) + 1]
        notes.append(f"larger than {limit // 1024:,} KiB: only the lines in its first {limit // 1024:,} KiB are used")
    return data


def read_bounded(path: str, notes: list[str], limit: int = MAX_FILE_BYTES) -> str | None:
    """:func:`read_bytes` decoded as UTF-8 (an invalid byte replaced): a git config file's text."""
    data = read_bytes(path, notes, limit)
    return None if data is None else data.decode("utf-8", "replace")


def repository(folder: str) -> tuple[str | None, str | None]:
    """The top of the git repository ``folder`` (a real path) lies in, and the git folder that holds its config and
    ``info/exclude`` (a worktree's or a submodule's ``.git`` file names it; a worktree's shares its main one's);
    ``(None, None)`` outside any repository."""
    current = folder
    while True:
        dot = os.path.join(current, ".git")
        if os.path.isdir(dot):
            return current, dot
        if os.path.isfile(dot):
            return current, _linked_git_dir(current, dot)
        parent = os.path.dirname(current)
        if parent == current:
            return None, None
        current = parent


def _linked_git_dir(top: str, dot: str) -> str | None:
    notes: list[str] = []
    text = read_bounded(dot, notes, 4096) or ""
    key, _, value = text.strip().partition(":")
    if key.strip() != "gitdir" or not value.strip():
        return None
    git_dir = os.path.normpath(os.path.join(top, value.strip()))
    common = (read_bounded(os.path.join(git_dir, "commondir"), notes, 4096) or "").strip()
    return os.path.normpath(os.path.join(git_dir, common)) if common else git_dir


def excludes_file(git_dir: str | None, base: str) -> str:
    """The global excludes file: ``core.excludesFile`` as git's config files set it (system, global, then the
    repository's own, the last one setting it winning), else ``$XDG_CONFIG_HOME/git/ignore`` (``~/.config/...``).
    Git's ``GIT_CONFIG_NOSYSTEM`` and ``GIT_CONFIG_GLOBAL`` are honoured; ``include`` directives are not followed."""
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    configs = [] if os.environ.get("GIT_CONFIG_NOSYSTEM") else ["/etc/gitconfig"]
    own_global = os.environ.get("GIT_CONFIG_GLOBAL")
    configs += [own_global] if own_global else [os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")]
    if git_dir is not None:
        configs.append(os.path.join(git_dir, "config"))
    value = None
    for config in configs:
        found = config_value(config, "core", "excludesfile")
        value = found if found is not None else value
    if not value:
        return os.path.join(xdg, "git", "ignore")
    return os.path.join(base, os.path.expanduser(value))  # a relative one: from the repository's top


def config_value(path: str, section: str, key: str) -> str | None:
    """The last value of ``section.key`` (lower case: git's names are not case-sensitive) in the git config file at
    ``path``, or ``None``. Enough of git's syntax for one plain value: sections (a subsection is another section),
    comments, quotes and backslash escapes."""
    text = read_bounded(path, [])
    if text is None:
        return None
    current = None
    found = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            header, _, rest = line[1:].partition("]")
            current = header.strip().lower() if '"' not in header else None
            line = rest.strip()  # "[core] excludesFile = x" is one line for git
        if not line or line[0] in "#;" or current != section:
            continue
        name, equals, value = line.partition("=")
        if name.strip().lower() == key:
            found = _unquoted(value) if equals else ""
    return found


def _unquoted(value: str) -> str:
    """A git config value as git reads it: quotes removed, ``\\"``, ``\\\\``, ``\\t``, ``\\n`` unescaped, a comment
    outside quotes dropped, white space at its ends (outside quotes) dropped."""
    out: list[str] = []
    quoted = False
    kept = 0  # length of out up to the last character that was quoted or not white space
    chars = iter(value.strip())
    for c in chars:
        if c == '"':
            quoted = not quoted
            kept = len(out)
            continue
        if c == "\\":
            nxt = next(chars, "")
            out.append({"t": "\t", "n": "\n", "b": "\b"}.get(nxt, nxt))
            kept = len(out)
            continue
        if not quoted and c in "#;":
            break
        out.append(c)
        if quoted or not c.isspace():
            kept = len(out)
    return "".join(out[:kept])
