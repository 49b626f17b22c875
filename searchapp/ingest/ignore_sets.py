"""One ignore file's patterns compiled into RE2 sets, and the compiled files kept between walks (``ingest/ignore.py``
reads the files and applies the levels; ``ingest/wildmatch.py`` reads the lines and translates the patterns).

A file's patterns (each distinct line once, where it last stands) are compiled in parts of at most
:data:`PART_BYTES` bytes of lines, each part two RE2 sets anchored at both ends: the patterns matched against a
path's last name, and those matched against its path. A set answers every pattern that matches in one pass over the
text (RE2's DFA: linear in the text whatever the patterns), so the last matching pattern of the file decides, exactly,
however many parts it takes. A part RE2 cannot compile within :data:`SET_MEMORY` is compiled in halves, a single
pattern it cannot compile dropped (said in a note). Each set also holds a pattern that matches every text, so a
search RE2 gives up (its DFA out of memory: RE2 answers "no match") is told from no match, and the part's patterns
are then tried one by one.

A compiled file is kept (:func:`compiled`), keyed by a digest of its bytes, for the next walk: a watcher walks at
every change, and a changed ignore file is another key. What is kept is bounded by :data:`KEPT_PATTERNS`.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import re2

from searchapp.ingest.wildmatch import Pattern, lines, parse

# No path is longer (Linux's PATH_MAX, in bytes), so no longer pattern is used (even one whose brackets would
# spend more pattern than path).
MAX_PATTERN_CHARS = 4096
# The bytes of lines compiled into one RE2 set; at most two sets a part. Larger parts are fewer searches a path;
# RE2 compiles this many bytes of realistic patterns within its memory bound (a hostile part is halved).
PART_BYTES = 16_000
# RE2's memory bound a set (its program and DFA states): what a hostile set can hold, searches past it slower.
SET_MEMORY = 2 << 20
# The patterns kept compiled between walks, over all the files kept (each file counts one more): twice what one walk
# may compile (ingest/ignore.MAX_PATTERNS).
KEPT_PATTERNS = 40_000

_MATCHES_ALL = rb"[\x00-\x{ff}]*"  # a set's first pattern: its answer is never empty unless RE2 gave up


def _options() -> re2.Options:
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1  # a byte a character, as git's wildmatch reads both sides
    options.max_mem = SET_MEMORY
    options.log_errors = False
    return options


class PatternSet:
    """Some of one file's patterns, in its order, as one RE2 set; ``orders``: their positions in the file."""

    def __init__(self, patterns: Sequence[tuple[int, Pattern]]) -> None:
        """Compiles ``patterns``; ``re2.error`` where RE2 cannot within :data:`SET_MEMORY`."""
        self.orders = [order for order, _ in patterns]
        self.regexes = [pattern.regex.encode("ascii") for _, pattern in patterns]
        self._set = re2.Set.FullMatchSet(_options())
        for regex in (_MATCHES_ALL, *self.regexes):
            self._set.Add(regex)
        self._set.Compile()
        if not self._set.Match(b""):  # compiled, but no room left for its DFA: every search would give up
            raise re2.error("no memory left for the search")
        self._one_by_one: list[re2._Regexp] | None = None

    def last(self, text: bytes) -> int | None:
        """The position in the file of the last of these patterns that matches the whole of ``text``, or ``None``."""
        found = self._set.Match(text) or self._each(text)
        best = max(found)
        return self.orders[best - 1] if best else None

    def _each(self, text: bytes) -> list[int]:
        """The patterns matching ``text``, tried one by one (RE2 gave up on the set: a hostile one)."""
        if self._one_by_one is None:
            self._one_by_one = [re2.compile(regex, _options()) for regex in self.regexes]
        return [0] + [i for i, regex in enumerate(self._one_by_one, 1) if regex.fullmatch(text)]


@dataclass(frozen=True)
class Part:
    """Consecutive patterns of one file: ``names``, tried on a path's last name; ``paths``, on its path relative
    to the file's folder, which need trying only where it holds one of ``slashes`` slashes, or ``anywhere``."""

    names: PatternSet | None
    paths: PatternSet | None
    slashes: frozenset[int]
    anywhere: bool

    def last(self, path: bytes, start: int, name: bytes, slashes: int, mark: bytes) -> int | None:
        found = self.names.last(name + mark) if self.names is not None else None
        if self.paths is not None and (self.anywhere or slashes in self.slashes):
            other = self.paths.last(path[start:] + mark)
            found = other if found is None or (other is not None and other > found) else found
        return found


@dataclass(frozen=True)
class Compiled:
    """One ignore file compiled: its ``parts`` in order and whether each pattern position is a negation; ``used``,
    the patterns it counts against a walk's budget; ``notes``, what was left out of it; ``truncated``: compiled
    up to the budget it was given."""

    parts: tuple[Part, ...]
    negated: dict[int, bool]
    used: int
    notes: tuple[str, ...]
    truncated: bool

    def decide(self, path: bytes, start: int, name: bytes, slashes: int, is_dir: bool) -> bool | None:
        """``True``: ignored; ``False``: a negation re-includes it; ``None``: no pattern matches. ``path[start:]``:
        the path relative to the file's folder, ``/``-separated, holding ``slashes`` slashes (sliced only where a
        pattern could match it); ``name``: its last name."""
        mark = b"\0" if is_dir else b""
        for part in reversed(self.parts):
            found = part.last(path, start, name, slashes, mark)
            if found is not None:
                return not self.negated[found]
        return None


_kept: OrderedDict[tuple[bytes, int | None], Compiled] = OrderedDict()
_kept_patterns = 0
_lock = threading.Lock()


def compiled(data: bytes, budget: int, max_patterns: int) -> Compiled:
    """The ignore file of bytes ``data`` compiled, at most ``budget`` of its patterns (``max_patterns``: the walk's
    bound, named in the note), kept for the next walk."""
    digest = hashlib.blake2b(data, digest_size=16).digest()
    global _kept_patterns
    with _lock:
        whole = _kept.get((digest, None))
        if whole is not None and whole.used <= budget:
            _kept.move_to_end((digest, None))
            return whole
        if (cut := _kept.get((digest, budget))) is not None:
            _kept.move_to_end((digest, budget))
            return cut
    made = _compile(data, budget, max_patterns)
    key = (digest, budget if made.truncated else None)
    with _lock:
        if key not in _kept:
            _kept[key] = made
            _kept_patterns += made.used + 1
        while _kept_patterns > KEPT_PATTERNS and len(_kept) > 1:
            _, old = _kept.popitem(last=False)
            _kept_patterns -= old.used + 1
    return made


def forget() -> None:
    """Drop every compiled file kept (tests measure a first compile)."""
    global _kept_patterns
    with _lock:
        _kept.clear()
        _kept_patterns = 0


def _compile(data: bytes, budget: int, max_patterns: int) -> Compiled:
    # Each line once, where it last stands: an earlier copy never decides (the later one matches the same paths),
    # so a file of one line repeated costs one pattern.
    chosen: dict[bytes, None] = {}
    notes: list[str] = []
    truncated = False
    for number, line in lines(data):
        if len(line) > MAX_PATTERN_CHARS:
            continue
        if line in chosen:
            del chosen[line]
        elif len(chosen) >= budget:
            notes.append(f"only its first {number:,} lines are used: the ignore files of one folder may hold "
                         f"{max_patterns:,} patterns in all")
            truncated = True
            break
        chosen[line] = None
    patterns = [(order, line, pattern) for order, line in enumerate(chosen) if (pattern := parse(line)) is not None]
    parts: list[Part] = []
    dropped = 0
    start = size = 0
    for i, (_, line, _) in enumerate(patterns):
        if size and size + len(line) > PART_BYTES:
            dropped += _compile_part(patterns[start:i], parts)
            start, size = i, 0
        size += len(line)
    dropped += _compile_part(patterns[start:], parts)
    if dropped:
        notes.append(f"{dropped:,} patterns too complex for the matcher's memory bound are not used")
    return Compiled(tuple(parts), {order: pattern.negated for order, _, pattern in patterns}, len(chosen),
                    tuple(notes), truncated)


def _compile_part(patterns: list[tuple[int, bytes, Pattern]], parts: list[Part]) -> int:
    """Appends ``patterns`` to ``parts`` as one part, or as halves where RE2 cannot compile them within its memory
    bound; the number of single patterns it could not compile (dropped)."""
    if not patterns:
        return 0
    names = [(order, p) for order, _, p in patterns if p.basename]
    paths = [(order, p) for order, _, p in patterns if not p.basename]
    try:
        parts.append(Part(PatternSet(names) if names else None, PatternSet(paths) if paths else None,
                          frozenset(p.slashes for _, p in paths if p.slashes is not None),
                          any(p.slashes is None for _, p in paths)))
        return 0
    except re2.error:
        if len(patterns) == 1:
            return 1
        half = len(patterns) // 2
        return _compile_part(patterns[:half], parts) + _compile_part(patterns[half:], parts)
