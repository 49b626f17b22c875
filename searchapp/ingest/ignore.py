"""Ignore rules as git applies them: which files and folders of a folder being ingested its ignore files leave out.

Read, without running git (it may be absent): the ``.gitignore`` and ``.ignore`` files of every folder walked
(patterns relative to the folder holding the file; ``.ignore``, ripgrep's, decides before the ``.gitignore`` of the
same folder), those of the folders above the root up to the top of the git repository the root lies in, that
repository's ``info/exclude``, and the global excludes file (``core.excludesFile`` in git's config files, else
``$XDG_CONFIG_HOME/git/ignore`` or ``~/.config/git/ignore``). A deeper folder's file decides before a shallower
one's, then ``info/exclude``, then the global file; within one file the last matching pattern decides, negations
and directory-only patterns as pathspec's ``GitIgnoreSpec`` reads them. ``.gitignore`` files apply outside a git
repository too (a folder copied out of one keeps its rules). The folder being ingested is read even where the rules
above it ignore it (named explicitly, as ripgrep reads a path it is given): those rules are then not used.

Ignore files are untrusted text (a downloaded repository's): each is read up to :data:`MAX_FILE_BYTES` (the rest
is not used, said in one warning), one walk compiles at most :data:`MAX_PATTERNS` patterns in all, a pattern longer
than any path (:data:`MAX_PATTERN_CHARS`) is dropped, and patterns are matched by RE2 (pathspec's ``re2`` backend):
an automaton, linear in the path whatever the pattern (Python's backtracking ``re`` takes minutes on ``*a*a*a*a*b``
against a long name), compiled in parts small enough for RE2's memory bound (within a part the last matching
pattern decides as ``GitIgnoreSpec`` decides; across parts, the last part with a match: the same answer but where a
file of more than about 8,000 characters mixes directory and file matches of one path across them); a part RE2
still cannot compile is compiled in halves, a single pattern it cannot compile dropped with a warning.
"""

from __future__ import annotations

import os
import stat
import warnings
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import re2
from pathspec import GitIgnoreSpec
from pathspec.patterns.gitignore import GitIgnorePatternError
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

# The ignore files of a folder, in the order they decide (ripgrep gives .ignore precedence over .gitignore).
IGNORE_FILES = (".ignore", ".gitignore")
# A repository's own excludes, relative to its git folder.
INFO_EXCLUDE = ("info", "exclude")
# The most of one ignore file (or git config file) read: a real one is a few kilobytes.
MAX_FILE_BYTES = 2**20
# The most patterns one walk compiles, over all its ignore files (about 2 s and 40 MB of compiled patterns per
# 10,000 here); a real repository has hundreds.
MAX_PATTERNS = 20_000
# No path is longer (Linux's PATH_MAX), so no longer pattern could match one.
MAX_PATTERN_CHARS = 4096
# Patterns are compiled in parts of at most this many characters of lines: RE2's default memory bound (8 MiB) takes
# about 16,000 of realistic patterns (400 of 40 characters), refusing more (and a hostile few: "*a" 2,000 times).
PART_CHARS = 8000

# (path of an ignore file, a warning about it): a file read in part, or not read.
Warn = Callable[[str, str], None]


@dataclass(frozen=True)
class Rules:
    """One ignore file's patterns, compiled: ``specs`` in the file's order (one spec, unless RE2 needed the
    patterns in parts; then the last part that matches decides)."""

    source: str
    specs: tuple[GitIgnoreSpec, ...]

    def decide(self, relative: str) -> bool | None:
        """``True``: ignored; ``False``: a negation re-includes it; ``None``: no pattern matches ``relative`` (POSIX,
        relative to the folder of the file, ending in ``/`` for a folder)."""
        for spec in reversed(self.specs):
            found = spec.check_file(relative).include
            if found is not None:
                return found
        return None


@dataclass(frozen=True)
class Level:
    """The rules that speak of the paths under ``folder``, relative to it, in the order they decide."""

    folder: str
    rules: tuple[Rules, ...]


def decide(levels: Sequence[Level], path: str, is_dir: bool) -> bool:
    """The one rule: whether ``path`` (absolute, under every level's folder) is ignored by ``levels`` (outermost
    first): the deepest level with a matching pattern decides. The folders above ``path`` are not looked at: a walk
    does not enter an ignored folder (:meth:`Ignores.ignores` decides each one on the way)."""
    for level in reversed(levels):
        relative = _relative(path, level.folder) + ("/" if is_dir else "")
        for rules in level.rules:
            found = rules.decide(relative)
            if found is not None:
                return found
    return False


def _relative(path: str, folder: str) -> str:
    relative = path[len(folder.rstrip(os.sep)) + 1:].replace(os.sep, "/")
    # A name that is not UTF-8 (kept by Python as surrogates) cannot reach RE2 as it is.
    return relative.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


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
        self._current: list[Level] = []  # the levels in force in the folder a walk entered last
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
            for part in _relative(root, top).split("/") if root != top else ():
                found = self._level(folder, [os.path.join(folder, name) for name in IGNORE_FILES])
                outer += [found] if found else []
                folder = os.path.join(folder, part)
        if outer and root != base and decide(outer, root, True):
            outer = []  # named explicitly: read, and the rules that would leave it out are not used
        self.outer = outer

    # -- a walk, folder by folder (os.walk's order: each folder after the one holding it) ------------------------

    def enter(self, folder: str, names: Collection[str]) -> None:
        """The walk lists ``folder`` (at or under the root, after each folder above it), whose entries are
        ``names``: its ignore files are read, and with those of the folders above it speak of its entries."""
        if folder not in self._own_levels:
            self._own_levels[folder] = self._level(folder, [os.path.join(folder, n) for n in IGNORE_FILES
                                                            if n in names])
        chain = []
        current = folder
        while True:  # up to the root: the walk spells every folder under it
            if (own := self._own(current)) is not None:
                chain.append(own)
            parent = os.path.dirname(current)
            if current == self.root or parent == current:
                break
            current = parent
        self._current = [*self.outer, *reversed(chain)]

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether the walk leaves out ``path``, an entry of the folder it entered last."""
        return bool(self._current) and decide(self._current, path, is_dir)

    # -- a path looked up (a watcher's events), each folder on the way decided as a walk would ---------------------

    def ignores(self, path: str) -> bool:
        """Whether ``path`` (absolute, under the root; existing or not) or a folder between the root and it is
        ignored."""
        levels = list(self.outer)
        folder = self.root
        parts = _relative(path, self.root).split("/") if path != self.root else []
        for i, part in enumerate(parts):
            if (own := self._own(folder)) is not None:
                levels.append(own)
            entry = os.path.join(folder, part)
            last = i == len(parts) - 1
            if decide(levels, entry, not last or os.path.isdir(entry)):
                return True
            folder = entry
        return False

    def _own(self, folder: str) -> Level | None:
        if folder not in self._own_levels:
            self._own_levels[folder] = self._level(folder, [os.path.join(folder, n) for n in IGNORE_FILES])
        return self._own_levels[folder]

    # -- reading -------------------------------------------------------------------------------------------------

    def _level(self, folder: str, files: Sequence[str]) -> Level | None:
        rules = tuple(r for r in map(self._rules, files) if r is not None)
        return Level(folder, rules) if rules else None

    def _rules(self, path: str) -> Rules | None:
        """The patterns of the ignore file at ``path`` compiled, within the walk's budget; ``None`` where there is
        no such file (or no pattern in it)."""
        notes: list[str] = []
        text = read_bounded(path, notes)
        if text is None:
            self._say(path, notes)
            return None
        # Each line once, where it last stands: an earlier copy of a line never decides (the later one matches the
        # same paths), so a file of one line repeated costs one pattern.
        patterns: dict[str, GitIgnoreSpecPattern] = {}
        lines = text.removeprefix("\ufeff").splitlines()
        with warnings.catch_warnings():
            # Python's re warns of a "possible nested set" for a pattern holding "[[": a pattern is no code here.
            warnings.simplefilter("ignore", FutureWarning)
            for number, line in enumerate(lines):
                if not line.strip() or line.startswith("#") or len(line) > MAX_PATTERN_CHARS:
                    continue
                if line in patterns:
                    patterns[line] = patterns.pop(line)
                    continue
                if len(patterns) >= self.budget:
                    notes.append(f"only its first {number:,} lines are used: the ignore files of one folder "
                                 f"may hold {MAX_PATTERNS:,} patterns in all")
                    break
                try:
                    pattern = GitIgnoreSpecPattern(line)
                except (GitIgnorePatternError, ValueError):
                    continue  # git ignores a malformed pattern (an unclosed bracket, say) without a word
                if pattern.include is not None:
                    patterns[line] = pattern
        self.budget -= len(patterns)
        specs = tuple(spec for part in _parts(patterns) for spec in _compile(part))
        if (dropped := len(patterns) - sum(len(s.patterns) for s in specs)) > 0:
            notes.append(f"{dropped:,} patterns too complex for the matcher's memory bound are not used")
        self._say(path, notes)
        return Rules(path, specs) if specs else None

    def _say(self, path: str, notes: list[str]) -> None:
        if notes and self.warn is not None:
            self.warn(path, f"ignore file: {'; '.join(notes)}")


def _parts(patterns: dict[str, GitIgnoreSpecPattern]) -> list[list[GitIgnoreSpecPattern]]:
    """The patterns (by their lines) in consecutive parts of at most :data:`PART_CHARS` characters of lines (a
    longer line alone), each of which RE2 compiles within its memory bound but for hostile patterns."""
    parts: list[list[GitIgnoreSpecPattern]] = []
    size = PART_CHARS
    for line, pattern in patterns.items():
        if size + len(line) > PART_CHARS:
            parts.append([])
            size = 0
        parts[-1].append(pattern)
        size += len(line)
    return parts


def _compile(patterns: list[GitIgnoreSpecPattern]) -> list[GitIgnoreSpec]:
    """``patterns`` as RE2 pattern sets, in order: one, or halves where RE2 cannot compile them within its memory
    bound (a few thousand patterns); a single pattern it cannot compile is dropped."""
    if not patterns:
        return []
    try:
        return [GitIgnoreSpec(patterns, backend="re2")]
    except re2.error:
        if len(patterns) == 1:
            return []
        half = len(patterns) // 2
        return _compile(patterns[:half]) + _compile(patterns[half:])


def read_bounded(path: str, notes: list[str], limit: int = MAX_FILE_BYTES) -> str | None:
    """The text of the regular file at ``path``, its first ``limit`` bytes at most (to the last whole line, said in
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
    return data.decode("utf-8", "replace")


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
