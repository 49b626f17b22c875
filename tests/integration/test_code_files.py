"""Code and configuration files in a folder: indexed beside the prose, each hit with its definition as its section
and the file's own line and column; ``.gitignore`` and hidden files left out as for any file; ``--exclude`` leaves
code out."""

from __future__ import annotations

from pathlib import Path

from searchapp.ingest.files import Found, walk

APP = '''"""The application."""
import os


class Cache:
    """Keeps values."""

    # Forgets what is older than the limit.
    def evict_stale_entries(self, limit):
        return [k for k in self.keys if k.age > limit]


def main():
    Cache().evict_stale_entries(10)
'''


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "examples").mkdir(parents=True)
    (docs / "guide.md").write_text("# Guide\n\nThe cache forgets old values by itself.\n")
    (docs / "examples" / "app.py").write_text(APP)
    (docs / "Makefile").write_text("html:\n\tsphinx-build -b html . _build\n")
    (docs / "settings.toml").write_text("[server]\nport = 8080\n")
    (docs / ".hidden.py").write_text("secret = 1\n")
    (docs / "generated.py").write_text("generated = 1\n")
    (docs / ".gitignore").write_text("generated.py\n")
    for i, topic in enumerate(["tomatoes", "rivers", "violins", "glaciers"]):
        (docs / f"z{i}.md").write_text(f"# {topic.title()}\n\nNotes on {topic} and how {topic} change over time.\n")
    return docs


def test_the_walk_finds_code_files_and_leaves_out_hidden_and_ignored_ones(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    found = {item.path.relative_to(docs).as_posix() for item in walk(docs) if isinstance(item, Found)}
    assert {"examples/app.py", "Makefile", "settings.toml", "guide.md"} <= found
    assert ".hidden.py" not in found and "generated.py" not in found
    only_prose = {item.path.name for item in walk(docs, exclude=("*.py", "*.toml", "Makefile"))
                  if isinstance(item, Found)}
    assert only_prose == {"guide.md", "z0.md", "z1.md", "z2.md", "z3.md"}
    assert {item.path.name for item in walk(docs, include=("*.md",)) if isinstance(item, Found)} == only_prose
    assert {item.path.name for item in walk(docs, include=("*.py",)) if isinstance(item, Found)} == {"app.py"}


def test_a_hit_in_code_has_its_definition_as_section_and_the_files_line(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    ix = index_at(max_tokens=64)
    summary = ix.ingest(_folder(tmp_path))
    assert summary.failed == 0
    hits = ix.search("evict stale entries", k=1, mode="lexical")
    assert hits[0].path.endswith("app.py") and hits[0].title == "app.py"
    assert hits[0].section == "app.py > Cache > evict_stale_entries"
    assert hits[0].text.startswith("# Forgets what is older than the limit.\n    def evict_stale_entries")
    line = APP.split("\n").index("    # Forgets what is older than the limit.") + 1
    assert (hits[0].line, hits[0].column) == (line, 5)
    make = ix.search("sphinx-build", k=1, mode="lexical")
    assert make[0].title == "Makefile" and make[0].section == "Makefile > html" and make[0].line == 1
