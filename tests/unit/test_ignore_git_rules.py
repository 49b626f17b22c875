"""Ignore rules read exactly as git reads them (docs/reliability.md, "Ignore rules as git reads them"): each case
here is one where searchapp once disagreed with ``git ls-files -o --exclude-standard``, with git's answer written
out. The differential test over random trees: tests/integration/test_ignore_parity.py."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_ignore import walked, write


def tree(root: Path, files: list[str], ignores: dict[str, bytes]) -> None:
    for rel in files:
        write(root / rel)
    for rel, data in ignores.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def test_keeping_only_markdown_keeps_the_markdown_of_every_subfolder(tmp_path: Path) -> None:
    # "!*/" re-includes every folder, so git goes in and "!*.md" decides each file there.
    root = tmp_path / "root"
    tree(root, ["a.md", "a.txt", "sub/b.md", "sub/b.txt", "sub/deep/c.md"], {".gitignore": b"*\n!*/\n!*.md\n"})
    assert sorted(walked(root)) == ["a.md", "sub/b.md", "sub/deep/c.md"]


def test_a_nearer_folder_negation_does_not_re_include_the_files_in_it(tmp_path: Path) -> None:
    # "!drafts/" speaks of the folder drafts (it is not ignored anyway), not of the files inside: the top file's
    # "*.private.md" still decides those.
    root = tmp_path / "root"
    tree(root, ["notes/drafts/plan.private.md", "notes/drafts/plan.md", "notes/a.private.md"],
         {".gitignore": b"*.private.md\n", "notes/.gitignore": b"!drafts/\n"})
    assert walked(root) == ["notes/drafts/plan.md"]


def test_posix_classes_match_one_character_of_their_class(tmp_path: Path) -> None:
    root = tmp_path / "root"
    tree(root, ["a b.md", "ab.md", "sub/c d.md", "sub/cd.md", "x1.txt", "xy.txt"],
         {".gitignore": b"*[[:space:]]*\nx[[:digit:]].txt\n"})
    assert sorted(walked(root)) == ["ab.md", "sub/cd.md", "xy.txt"]


def test_a_pattern_ends_at_a_newline_only(tmp_path: Path) -> None:
    # git splits an ignore file at "\n" and drops one "\r" before it: a form feed, U+2028, NEL or a lone "\r" is
    # part of the pattern (here no file is named by those patterns but "a\fb.md").
    root = tmp_path / "root"
    tree(root, ["a\fb.md", "b.md", "d.md", "f.md", "h.md", "i.md", "j.md", "k.md"],
         {".gitignore": "a\fb.md\nc.md\u2028d.md\ne.md\x85f.md\ng.md\rh.md\ni.md\r\nj.md\r\r\n".encode()})
    assert sorted(walked(root)) == ["b.md", "d.md", "f.md", "h.md", "j.md", "k.md"]
