"""Ignore rules (searchapp.ingest.ignore) as the walk applies them: .gitignore at every level with negations and
directory-only patterns, .ignore, a repository's info/exclude and the folders above the root, git's global excludes
file as git's config names it, ignored folders never listed, the same answer for a path looked up as for a walk, and
hostile ignore files (too large, patterns that would backtrack) read within bounds."""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from searchapp.ingest import ignore
from searchapp.ingest.files import Found, Skipped, Warned, found, walk
from searchapp.ingest.ignore import Ignores, config_value, ignore_scope
from tests.unit.test_markup_linear import cpu_seconds, needs_cpu_timer


def write(path: Path, content: str = "content") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


def walked(root: Path, skipped: Counter[str] | None = None, on_warning: Any = None, **options: object) -> list[str]:
    """The files a walk finds, relative to ``root``; what it leaves out counted in ``skipped``, its warnings
    handed to ``on_warning(path, warning)``."""
    out = []
    for item in walk(root, **options):  # type: ignore[arg-type]
        if isinstance(item, Found):
            out.append(item.path.relative_to(root).as_posix())
        elif isinstance(item, Skipped) and item.path is None and skipped is not None:
            skipped[item.reason] += item.n
        elif isinstance(item, Warned) and on_warning is not None:
            on_warning(item.path, item.warning)
    return out


def test_gitignore_at_every_level_with_negations_anchors_and_directory_only_patterns(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / ".gitignore", "# build output\n*.log.txt\n!keep.log.txt\nbuild/\n/top.md\nnotes.md/\n")
    write(root / "a" / ".gitignore", "local.md\n!*.log.txt\n")
    for rel in ["a.md", "x.log.txt", "keep.log.txt", "build/b.md", "a/build/c.md", "top.md", "a/top.md",
                "a/local.md", "local.md", "a/y.log.txt", "notes.md"]:
        write(root / rel)
    skipped: Counter[str] = Counter()
    assert walked(root, skipped=skipped) == ["a.md", "keep.log.txt", "local.md", "notes.md", "a/top.md",
                                             "a/y.log.txt"]
    # x.log.txt, top.md, a/local.md; build/ and a/build/ once each (a folder is not listed)
    assert skipped["ignored"] == 5 and skipped["hidden"] == 2
    everything: Counter[str] = Counter()
    assert len(walked(root, ignore_rules=False, skipped=everything)) == 11 and everything["ignored"] == 0


def test_dot_ignore_decides_before_the_gitignore_of_its_folder(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / ".gitignore", "*.md\n")
    write(root / ".ignore", "!keep.md\n")
    write(root / "keep.md")
    write(root / "other.md")
    assert walked(root) == ["keep.md"]


def test_info_exclude_the_folders_above_and_the_global_excludes_file_apply(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    write(repo / ".git" / "info" / "exclude", "by-info.md\n")
    write(repo / ".gitignore", "*.tmp.md\nbuild/\n")
    write(tmp_path / "config-home" / "git" / "ignore", "by-global.md\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-home"))
    for rel in ["docs/a.md", "docs/by-info.md", "docs/by-global.md", "docs/x.tmp.md", "build/site/page.md"]:
        write(repo / rel)
    assert walked(repo) == ["docs/a.md"]
    # A folder of the repository: the rules above it still apply...
    assert walked(repo / "docs") == ["a.md"]
    # ...unless they leave the folder itself out: named explicitly, it is read (as ripgrep reads a path it is given).
    assert walked(repo / "build" / "site") == ["page.md"]
    # core.excludesFile, where git's config sets it, takes the default file's place.
    write(Path(os.environ["HOME"]) / ".gitconfig", '[user]\n\tname = x\n[core]\n\texcludesFile = "~/mine" ; note\n')
    write(Path(os.environ["HOME"]) / "mine", "a.md\n")
    assert walked(repo / "docs") == ["by-global.md"]


def test_a_worktree_reads_the_info_exclude_of_the_repository_it_belongs_to(tmp_path: Path) -> None:
    main_git = tmp_path / "main" / ".git"
    write(main_git / "info" / "exclude", "private.md\n")
    write(main_git / "worktrees" / "w" / "commondir", "../..\n")
    tree = tmp_path / "w"
    write(tree / ".git", f"gitdir: {main_git / 'worktrees' / 'w'}\n")
    write(tree / "private.md")
    write(tree / "public.md")
    assert walked(tree) == ["public.md"]


def test_git_config_values_are_read_as_git_reads_them(tmp_path: Path) -> None:
    config = write(tmp_path / "config", '[Core]\n  excludesfile = /first\n[core "sub"]\n  excludesFile = /not-this\n'
                                        '[core]\n  ExcludesFile = "/a b" # comment\n[other]\n excludesFile = /no\n')
    assert config_value(str(config), "core", "excludesfile") == "/a b"
    assert config_value(str(tmp_path / "missing"), "core", "excludesfile") is None
    write(config, "[core] excludesFile = ~/x\\ty \n")
    assert config_value(str(config), "core", "excludesfile") == "~/x\ty"


def test_an_ignored_folder_is_never_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    write(root / ".gitignore", "node_modules/\n")
    for i in range(50):
        write(root / "node_modules" / f"pkg{i}" / "README.md")
    write(root / "a.md")
    listed: list[str] = []
    real_scandir = os.scandir

    def scandir(path):  # type: ignore[no-untyped-def]
        listed.append(os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    skipped: Counter[str] = Counter()
    assert walked(root, skipped=skipped) == ["a.md"]
    assert skipped["ignored"] == 1 and not any("node_modules" in p for p in listed)


def test_the_files_an_ignore_file_speaks_of() -> None:
    assert ignore_scope("/r/a/.gitignore") == "/r/a" and ignore_scope("/r/.ignore") == "/r"
    assert ignore_scope("/r/.git/info/exclude") == "/r"
    assert ignore_scope("/r/a/gitignore") is None and ignore_scope("/r/info/exclude") is None


NAMES = st.sampled_from(["a", "b", "a.md", "b.md", "x.txt"])
PATTERNS = st.lists(
    st.tuples(st.booleans(), st.sampled_from(["a", "b", "*.md", "a.md", "/a", "a/", "*/b.md", "**/x.txt", "a/**",
                                              "b/*", "[ab].md", "?.md", "*"]),
              st.booleans()).map(lambda t: ("!" if t[0] else "") + t[1] + ("/" if t[2] and not t[1].endswith("/")
                                                                           else "")),
    max_size=5)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.lists(NAMES, min_size=1, max_size=3), min_size=1, max_size=8), top=PATTERNS,
       deeper=PATTERNS)
def test_a_path_looked_up_is_ignored_exactly_when_the_walk_leaves_it_out(
    tmp_path_factory: pytest.TempPathFactory, files: list[list[str]], top: list[str], deeper: list[str]
) -> None:
    """The watcher's question (ingest/watch.py) and the walk's have one answer."""
    root = tmp_path_factory.mktemp("tree")
    made = set()
    for parts in files:
        # "name.md" as a file, and the parts before it as folders: skip what would make a file and a folder of one
        # name.
        path = root.joinpath(*parts[:-1], parts[-1] + ".md")
        if any(p in made for p in [path, *path.parents]) or any(str(m).startswith(str(path) + os.sep) for m in made):
            continue
        write(path)
        made.add(path)
    write(root / ".gitignore", "\n".join(top) + "\n")
    if (root / "a").is_dir():
        write(root / "a" / ".gitignore", "\n".join(deeper) + "\n")
    kept = {str(p) for p in found(walk(root))}
    rules = Ignores(str(root))
    for path in made:
        assert (str(path) in kept) == (not rules.ignores(str(path))), (path, top, deeper)


def test_an_ignore_file_over_a_mebibyte_is_used_up_to_it_with_one_warning(tmp_path: Path) -> None:
    root = tmp_path / "root"
    line = "# a comment line, as long as a line of patterns may be\n"
    filler = line * (ignore.MAX_FILE_BYTES // len(line) + 10)
    write(root / ".gitignore", "first.md\n" + filler + "last.md\n")
    for name in ["first.md", "last.md", "kept.md"]:
        write(root / name)
    warnings: list[tuple[str, str]] = []
    assert walked(root, on_warning=lambda path, warning: warnings.append((path, warning))) == ["kept.md", "last.md"]
    assert warnings == [(str(root / ".gitignore"), "ignore file: larger than 1,024 KiB: only the lines in its first "
                                                   "1,024 KiB are used")]


def test_one_walk_compiles_a_bounded_number_of_patterns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ignore, "MAX_PATTERNS", 3)
    root = tmp_path / "root"
    write(root / ".gitignore", "a.md\nb.md\n")
    write(root / "sub" / ".gitignore", "c.md\nd.md\n")
    for name in ["a.md", "b.md", "sub/c.md", "sub/d.md"]:
        write(root / name)
    warnings: list[tuple[str, str]] = []
    assert walked(root, on_warning=lambda path, warning: warnings.append((path, warning))) == ["sub/d.md"]
    assert warnings == [(str(root / "sub" / ".gitignore"), "ignore file: only its first 1 lines are used: the "
                                                           "ignore files of one folder may hold 3 patterns in all")]


def test_patterns_too_many_for_one_automaton_are_compiled_in_parts_with_the_same_answers(tmp_path: Path) -> None:
    rng = random.Random(4)
    words = ["".join(rng.choice("abcdefghij") for _ in range(30)) for _ in range(1500)]
    root = tmp_path / "root"
    write(root / ".gitignore", "".join(f"{w}.md\n" for w in words) + "!" + words[10] + ".md\n")
    for w in [words[0], words[10], words[-1], "unlisted"]:
        write(root / f"{w}.md")
    rules = Ignores(str(root))
    compiled = rules._own(str(root))
    # 1,501 lines are more bytes than one RE2 set is given (ignore_sets.PART_BYTES): the last match of all decides
    assert compiled is not None and len(compiled.rules[0].compiled.parts) > 1
    assert walked(root) == sorted([f"{words[10]}.md", "unlisted.md"])


# Patterns whose regular expressions backtrack in Python's re: minutes for one name, with no bound in sight.
HOSTILE_PATTERNS = ["*a" * 12 + "*b", "**/a" * 10 + "/b", "a*" * 20 + "/**/" + "*a" * 20 + "c", "[a]*" * 30 + "b",
                    "**/" + "?*" * 40 + "b"]
HOSTILE_NAMES = ["a" * 250 + "c", "/".join(["a"] * 120) + "/c", "/".join(["a" * 30 + "c"] * 8)]


@needs_cpu_timer
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extra=st.lists(st.text(alphabet="a*?/[]!\\b", min_size=1, max_size=80), max_size=20))
def test_hostile_patterns_are_matched_in_linear_time(tmp_path_factory: pytest.TempPathFactory,
                                                     extra: list[str]) -> None:
    root = tmp_path_factory.mktemp("hostile")
    write(root / ".gitignore", "\n".join(HOSTILE_PATTERNS + extra) + "\n")
    rules = Ignores(str(root))
    started = time.process_time()
    with cpu_seconds(5.0):
        for name in HOSTILE_NAMES:
            rules.ignores(str(root / name))
    assert time.process_time() - started < 1.0
