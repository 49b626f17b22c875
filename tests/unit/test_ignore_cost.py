"""What ignore files cost (docs/reliability.md, "Ignore rules as git reads them"): a compiled file is kept between
walks (a watcher walks at every change), a looked-up path costs one decision once the folders above it are known
(a watcher's event deep in a tree), and hostile ignore files, random or built to blow up a matcher, are compiled
and matched within a CPU-time bound."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from searchapp.ingest import ignore_sets
from searchapp.ingest.files import found, walk
from searchapp.ingest.ignore import Ignores
from searchapp.ingest.ignore_sets import Compiled
from tests.unit.test_ignore import write
from tests.unit.test_markup_linear import cpu_seconds, needs_cpu_timer


@pytest.fixture()
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The ignore files compiled from now on (their bytes), none kept from before."""
    ignore_sets.forget()
    made: list[bytes] = []
    real = ignore_sets._compile

    def counted(data: bytes, budget: int, max_patterns: int) -> Compiled:
        made.append(data)
        return real(data, budget, max_patterns)

    monkeypatch.setattr(ignore_sets, "_compile", counted)
    return made


@pytest.fixture()
def decisions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One item a compiled ignore file is asked about a path."""
    asked: list[int] = []
    real = Compiled.decide

    def counted(self: Compiled, *args: object) -> bool | None:
        asked.append(1)
        return real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Compiled, "decide", counted)
    return asked


def test_a_compiled_ignore_file_is_kept_for_the_next_walk_until_it_changes(tmp_path: Path,
                                                                          compiles: list[bytes]) -> None:
    root = tmp_path / "root"
    write(root / ".gitignore", "*.log.md\n")
    write(root / "sub" / ".gitignore", "draft.md\n")
    for rel in ["a.md", "x.log.md", "sub/draft.md", "sub/b.md"]:
        write(root / rel)
    for _ in range(3):  # a watcher's sessions, each a walk
        assert sorted(p.name for p in found(walk(root))) == ["a.md", "b.md"]
    assert len(compiles) == 2
    write(root / "sub" / ".gitignore", "b.md\n")
    assert sorted(p.name for p in found(walk(root))) == ["a.md", "draft.md"]
    assert compiles[2:] == [b"b.md\n"]


def deep_tree(root: Path, depth: int) -> str:
    """A chain of ``depth`` folders, an ignore file in each (one pattern that may match any path below it); the
    path of a file at the bottom."""
    folder = str(root)
    for i in range(depth):
        write(Path(folder) / ".gitignore", f"*.log\n!keep{i}.log\nbuild{i}/\n/x{i}/**/z\n")
        folder = os.path.join(folder, "d")
    return os.path.join(folder, "file.md")


def test_a_path_looked_up_deep_in_a_tree_costs_one_decision_a_level(tmp_path: Path, decisions: list[int]) -> None:
    depth = 200
    leaf = deep_tree(tmp_path / "root", depth)
    rules = Ignores(str(tmp_path / "root"))
    assert not rules.ignores(leaf)
    # The first path: each folder on the way decided once, against the levels above it.
    assert len(decisions) <= depth * (depth + 1) // 2 + depth
    decisions.clear()
    for name in ["file.md", "other.md", "new.log", "keep3.log"]:
        rules.ignores(os.path.join(os.path.dirname(leaf), name))
    # A watcher's next events there: each a decision of its own path, a level each at most (was a decision of
    # every folder on the way: 20,100 a path at this depth).
    assert len(decisions) <= 4 * depth


@needs_cpu_timer
def test_a_watchers_event_at_depth_800_is_milliseconds(tmp_path: Path) -> None:
    leaf = deep_tree(tmp_path / "root", 800)
    rules = Ignores(str(tmp_path / "root"))
    rules.ignores(leaf)
    started = time.process_time()
    with cpu_seconds(30.0):
        for _ in range(10):
            rules.ignores(leaf)
    # ~6 ms a path on a 2-core shared machine (was 1.4 s); a bound with room for a slow one.
    assert (time.process_time() - started) / 10 < 0.1


# Bytes a hostile ignore file is drawn from: glob syntax in every combination, classes, escapes, CRs, NULs.
PIECES = ["*", "**", "?", "/", "**/", "/**", "[", "]", "[!", "[^", "-", "\\", "[:alpha:]", "[[:space:]]", "[:", ":]",
          "a", "b", "ab", " ", "!", "#", "\r", "\0", "\t", "é", "[a-z]", "[]-]", "*a", "a*"]


def hostile_file(rng: random.Random, size: int) -> bytes:
    lines = []
    while sum(map(len, lines)) < size:
        kind = rng.random()
        if kind < 0.6:
            line = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 60)))
        elif kind < 0.75:
            line = "*a" * rng.randint(10, 200) + "*b"  # minutes in a backtracking matcher
        elif kind < 0.9:
            line = "[" + "".join(chr(rng.randint(32, 255)) for _ in range(rng.randint(100, 3000))) + "]*"
        else:
            line = "**/" * rng.randint(10, 400) + "a"
        lines.append(line)
    return "\n".join(lines).encode("utf-8", "surrogateescape")


HOSTILE_PATHS = ["a" * 250 + "c", "/".join(["a"] * 120) + "/c", "/".join(["ab" * 15 + "c"] * 8), "x y/\t/é.md"]


@needs_cpu_timer
def test_random_hostile_ignore_files_are_compiled_and_matched_within_a_cpu_bound(tmp_path: Path) -> None:
    ignore_sets.forget()
    rng = random.Random(7)
    started = time.process_time()
    with cpu_seconds(60.0):
        for case in range(8):
            root = tmp_path / f"case{case}"
            (root / "sub").mkdir(parents=True)
            # One of them the most a file is read: a MiB.
            (root / ".gitignore").write_bytes(hostile_file(rng, 2**20 if case == 0 else 32_000))
            (root / "sub" / ".ignore").write_bytes(hostile_file(rng, 8_000))
            rules = Ignores(str(root))
            for path in HOSTILE_PATHS:
                rules.ignores(str(root / "sub" / path))
    # ~2 s on a 2-core shared machine; the bound leaves room for a slow one, not for a backtracking matcher.
    assert time.process_time() - started < 15.0
