"""The walk leaves out exactly what git does: random trees of files and ignore files (.gitignore at several levels,
the repository's info/exclude, the global excludes file), with negations of files and folders, directory-only,
anchored and ``**`` patterns, brackets and POSIX classes, escapes, trailing spaces and CRLF lines, inside a fresh
``git init`` repository, compared with ``git ls-files -o --exclude-standard``.

Only what the ignore rules decide is compared: every generated file has a suffix a format claims (``.md``,
``.txt``), no name is hidden, no ``.ignore`` file (ripgrep's, which git does not read) is written. The cases are
drawn from a fixed seed, so a failure names a case that fails again; ``SEARCHAPP_PARITY_CASES`` draws more (the
figure in docs/reliability.md)."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from searchapp.ingest.files import found, walk

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

CASES = int(os.environ.get("SEARCHAPP_PARITY_CASES", "300"))
PER_REPOSITORY = 50
SEED = 53

# Folder and file names: glob characters, spaces (a trailing one too), a tab, a two-byte "é" ("?" is one byte for
# git), a byte that is not UTF-8.
FOLDERS = ["a", "b", "docs", "notes", "drafts", "x y", "é", "[ab]", "a*b", "q?", "back\\slash", "sp ", "t\tb",
           os.fsdecode(b"\xff")]
FILES = ["a", "b", "plan", "plan.private", "x y", "é", "[ab]", "a*b", "q?", "#c", "!n", "sp ", "ab", "1", "A"]
GENERIC = ["*", "*.md", "*.txt", "**", "?*", "*[[:space:]]*", "[!a]*", "*.private.md", "[[:upper:]]*", "*[[:digit:]]*",
           "[a-c]*", "?", "[]ab]*", "[[:alpha:][:punct:]]*", "*[[:foo:]]", "[a", "*\\", "[\\]]*", "[!]]*", "x[[:]y"]
SPECIAL = "*?[\\"


def glob_of(name: str, rng: random.Random) -> str:
    """A pattern that may match ``name``: its special characters escaped (or not), a character changed to ``?``,
    ``*`` or a bracket (matching it or not)."""
    out = [("\\" + c if c in SPECIAL and rng.random() < 0.8 else c) for c in name]
    for _ in range(rng.randint(0, 2)):
        i = rng.randrange(len(out))
        c = name[i]
        out[i] = rng.choice(["?", "*", f"[{c}x]", f"[!{c}]", "[a-z]", "[[:alpha:]]", "[[:space:]]", "[^b]",
                             "[[:digit:][:upper:]]", f"[\\{c}]", "**"])
    return "".join(out)


def pattern(rng: random.Random, names: list[str]) -> str:
    """One line of an ignore file, without its end."""
    if rng.random() < 0.05:
        return rng.choice(["", "# a comment", "   ", "\\#c.md", "\\!n.md"])
    atoms = [glob_of(rng.choice(names), rng) if rng.random() < 0.6 else rng.choice(GENERIC)
             for _ in range(rng.choice([1, 1, 1, 2, 2, 3]))]
    for i in range(len(atoms) - 1, 0, -1):
        if rng.random() < 0.15:
            atoms.insert(i, "**")
    line = "/".join(atoms)
    line = rng.choice(["", "", "", "/", "**/"]) + line + rng.choice(["", "", "", "/", "/**", "/*"])
    if rng.random() < 0.3:
        line = "!" + line
    return line + rng.choice(["", "", "", "", " ", "  ", "\\ ", "\t"])


def ignore_file(rng: random.Random, names: list[str]) -> bytes:
    ending = rng.choice(["\n", "\n", "\r\n"])
    text = ending.join(pattern(rng, names) for _ in range(rng.randint(1, 6)))
    return os.fsencode(text + (ending if rng.random() < 0.8 else ""))


def outer_file(rng: random.Random, names: list[str]) -> bytes:
    """info/exclude or the global excludes file: a few names (all of their kind, as "*" is, would leave the rest
    of the repository's batch nothing to compare)."""
    if rng.random() < 0.5:
        return b""
    return os.fsencode("".join(("!" if rng.random() < 0.2 else "") + glob_of(rng.choice(names), rng) + "\n"
                               for _ in range(rng.randint(1, 3))))


def make_case(root: Path, rng: random.Random) -> list[Path]:
    """A random tree under ``root``: its files, and .gitignore files at several of its folders."""
    folders = [Path()]
    for _ in range(rng.randint(1, 6)):
        folders.append(rng.choice(folders) / rng.choice(FOLDERS))
    files = []
    for _ in range(rng.randint(3, 14)):
        path = root / rng.choice(folders) / (rng.choice(FILES) + rng.choice([".md", ".txt"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"text")
        files.append(path)
    names = [part for f in folders for part in f.parts] + [p.name for p in files] + [p.stem for p in files]
    for folder in rng.sample(folders, rng.randint(1, len(folders))):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / ".gitignore").write_bytes(ignore_file(rng, names))
    return files


def git_kept(repo: Path, env: dict[str, str]) -> set[bytes]:
    out = subprocess.run(["git", "ls-files", "-o", "--exclude-standard", "-z"], cwd=repo, env=env, check=True,
                         capture_output=True).stdout
    # git lists the .gitignore files themselves (hidden: never indexed)
    return {p for p in out.split(b"\0") if p and not any(part.startswith(b".") for part in p.split(b"/"))}


def describe(repo: Path, case: str, differ: set[bytes]) -> str:
    lines = [f"case {case} (seed {SEED}): git and searchapp differ on {sorted(differ)}"]
    for ignore in sorted((repo / case).rglob(".gitignore")):
        lines.append(f"  {ignore.relative_to(repo)}: {ignore.read_bytes()!r}")
    for extra in [repo / ".git" / "info" / "exclude", Path(os.environ["HOME"]) / ".config" / "git" / "ignore"]:
        lines.append(f"  {extra.name}: {extra.read_bytes()!r}")
    return "\n".join(lines)


def test_the_walk_leaves_out_exactly_what_git_leaves_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)  # the global excludes file: $HOME/.config/git/ignore
    env = dict(os.environ)
    rng = random.Random(SEED)
    differences = []
    walked = kept = 0
    for batch in range(0, CASES, PER_REPOSITORY):
        repo = tmp_path / f"repo{batch}"
        subprocess.run(["git", "init", "-q", str(repo)], env=env, check=True)
        names = FOLDERS + FILES + [f + ".md" for f in FILES]
        (repo / ".git" / "info" / "exclude").write_bytes(outer_file(rng, names))
        excludes = Path(os.environ["HOME"]) / ".config" / "git" / "ignore"
        excludes.parent.mkdir(parents=True, exist_ok=True)
        excludes.write_bytes(outer_file(rng, names))
        for case in range(batch, min(batch + PER_REPOSITORY, CASES)):
            walked += len(set(make_case(repo / f"case{case}", rng)))
        ours = {os.fsencode(p.relative_to(repo).as_posix()) for p in found(walk(repo))}
        theirs = git_kept(repo, env)
        for case in sorted({p.split(b"/")[0].decode() for p in ours ^ theirs}):
            differ = {p for p in ours ^ theirs if p.startswith(os.fsencode(case) + b"/")}
            differences.append(describe(repo, case, differ))
        kept += len(theirs)
    assert not differences, f"{len(differences)} of {CASES} cases differ:\n" + "\n".join(differences[:5])
    assert 0.2 < kept / walked < 0.8, (kept, walked)  # the rules leave out some files and keep some
