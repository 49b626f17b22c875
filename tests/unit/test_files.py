"""Tests for searchapp.ingest.files: the walk (globs, hidden files, links, a file or missing root), scopes and the
one test of a path being under a folder."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from searchapp.errors import LoadError
from searchapp.ingest.files import Scope, Skipped, found, is_under, walk, walk_picks


def write(path: Path, content: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


# --- walk ------------------------------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for rel in ["b.txt", "a.md", "notes/x.md", "notes/deep/y.txt", "docs/z.pdf", "img.png", ".hidden.txt"]:
        write(root / rel, "content")
    write(root / ".git" / "config.txt", "content")
    os.symlink(root, root / "notes" / "loop")  # a directory symlink back to the root
    os.symlink(root / "b.txt", root / "linked.txt")
    return root


def skipped(items: list[Any]) -> Counter[str]:
    """What a walk left out silently, by reason."""
    out: Counter[str] = Counter()
    for item in items:
        if isinstance(item, Skipped) and item.path is None:
            out[item.reason] += item.n
    return out


def rels(root: Path, paths: list[Path]) -> list[str]:
    assert all(p.is_absolute() for p in paths)
    return [p.relative_to(root).as_posix() for p in paths]


def test_walk_sorted_skips_hidden_unsupported_and_loops(tree: Path) -> None:
    assert rels(tree, found(walk(tree))) == [
        "a.md",
        "b.txt",
        "linked.txt",
        "docs/z.pdf",
        "notes/x.md",
        "notes/deep/y.txt",
    ]


@pytest.mark.parametrize("name", ["ix", ".searchapp"])
def test_the_index_folder_under_the_root_is_neither_walked_nor_counted(tree: Path, name: str) -> None:
    before = list(walk(tree))
    for part in ["index.db", "index.db-wal", "vectors.faiss", "write.lock", "stray.md", "lexical/meta.json"]:
        write(tree / name / part, "the index's")
    after = list(walk(tree, index_folder=str(tree / name)))
    assert found(after) == found(before)
    assert skipped(after) == skipped(before)
    # The index as the root itself: what no format claims there is the index's, not counted, and its lexical
    # engine's folder is not walked.
    inside = list(walk(tree / name, index_folder=str(tree / name)))
    assert rels(tree / name, found(inside)) == ["stray.md"]
    assert skipped(inside)["unsupported"] == 0


def test_walk_include_exclude_globs(tree: Path) -> None:
    assert rels(tree, found(walk(tree, include=["*.md"]))) == ["a.md", "notes/x.md"]
    assert rels(tree, found(walk(tree, include=["notes/*"]))) == ["notes/x.md", "notes/deep/y.txt"]
    assert rels(tree, found(walk(tree, exclude=["notes/*", "*.txt"]))) == ["a.md", "docs/z.pdf"]
    assert rels(tree, found(walk(tree, include=["*.md", "*.pdf"], exclude=["x.md"]))) == ["a.md", "docs/z.pdf"]


def test_walk_relative_root_yields_absolute_paths(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree.parent)
    assert rels(tree, found(walk(Path("root"), include=["a.md"]))) == ["a.md"]


def test_walk_file_root_and_missing_root(tree: Path) -> None:
    assert found(walk(tree / "a.md")) == [tree / "a.md"]
    assert found(walk(tree / "img.png")) == []
    with pytest.raises(LoadError):
        found(walk(tree / "nope"))


def test_is_under_is_at_or_under_by_whole_names() -> None:
    assert is_under("/a/b", "/a/b") and is_under("/a/b/c.txt", "/a/b") and is_under("/a/b/c", "/a/b/")
    assert not is_under("/a/bc", "/a/b") and not is_under("/a", "/a/b") and not is_under("/a/b", "/a/b/c")
    assert is_under("/a", "/")


def test_a_link_out_of_the_folder_is_skipped_unless_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", write(tmp_path / "secret.txt", "secret")
    write(root / "a.txt", "a")
    os.symlink(outside, root / "out.txt")
    # A sibling whose name starts with the root's: under it by spelling, not by folder.
    write(tmp_path / "root2" / "b.txt", "b")
    os.symlink(tmp_path / "root2" / "b.txt", root / "near.txt")
    items = list(walk(root))
    left_out = [Path(i.path).name for i in items if isinstance(i, Skipped) and i.path is not None]
    assert [p.name for p in found(items)] == ["a.txt"] and left_out == ["near.txt", "out.txt"]
    assert [p.name for p in found(walk(root, follow_links=True))] == ["a.txt", "near.txt", "out.txt"]


def test_walk_picks_what_the_globs_select_and_the_root_itself() -> None:
    assert walk_picks("/r", "/r", ["*.md"], []) and walk_picks("/r/d/x.md", "/r", ["*.md"], [])
    assert not walk_picks("/r/d/x.pdf", "/r", ["*.md"], []) and not walk_picks("/r/d/x.md", "/r", [], ["d/*"])


def test_a_scope_covers_its_paths_and_what_is_under_them_and_leads_to_them() -> None:
    scope = Scope(["/r/a/", "/r/b/c.txt"])
    assert scope.covers("/r/a") and scope.covers("/r/a/x/y.txt") and scope.covers("/r/b/c.txt")
    assert not scope.covers("/r/b/d.txt") and not scope.covers("/r/ab")
    assert scope.leads_to("/r/b") and scope.leads_to("/r") and not scope.leads_to("/r/z")


def test_a_folder_a_thousand_deep_is_walked_without_recursion(tmp_path: Path) -> None:
    # os.walk recursed a level a folder (Python before 3.12): 1,100 levels raised RecursionError mid-ingest.
    root = write(tmp_path / "root" / "top.md", "top").parent
    folder = str(root)
    for _ in range(1100):  # made and removed a level at a time: os.makedirs and shutil.rmtree recurse too
        folder = os.path.join(folder, "d")
        os.mkdir(folder)
    write(Path(folder) / "bottom.md", "bottom")
    try:
        assert [p.name for p in found(walk(root))] == ["top.md", "bottom.md"]
    finally:
        os.unlink(os.path.join(folder, "bottom.md"))
        while folder != str(root):
            os.rmdir(folder)
            folder = os.path.dirname(folder)
