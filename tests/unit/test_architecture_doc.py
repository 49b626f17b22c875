"""docs/architecture.md is the map of the package: its table names every module, and every module it names exists.

A row names modules by path relative to ``searchapp/`` (``store/folder.py``; the package's own ``__init__.py`` as
``searchapp/__init__.py``), or names a folder (``cli/``, ``ingest/markup/``) whose row then names each of the
folder's modules by file name. Packages' ``__init__.py`` files other than the top one hold no code of their own
worth a row and are not asked for.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "searchapp"
DOC = ROOT / "docs" / "architecture.md"
TICKED = re.compile(r"`([^`\s]+)`")


def table_rows() -> dict[str, str]:
    """First cell's name -> the whole row, for the rows of the table of modules (``| `name` | owns |``)."""
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1].strip()
            match = TICKED.fullmatch(first)
            if match:
                rows[match.group(1)] = line
    return rows


def modules() -> set[str]:
    """Every module of the package, relative to searchapp/ (the top ``__init__.py`` as ``searchapp/__init__.py``)."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if "__pycache__" in rel:
            continue
        if path.name == "__init__.py":
            if rel == "__init__.py":
                found.add("searchapp/__init__.py")
            continue
        found.add(rel)
    return found


def named_by(rows: dict[str, str], module: str) -> bool:
    if module in rows:
        return True
    folder, _, name = module.rpartition("/")
    while folder:
        row = rows.get(folder + "/")
        if row is not None and name in TICKED.findall(row):
            return True
        folder, _, parent = folder.rpartition("/")
        name = f"{parent}/{name}"
    return False


def test_every_module_has_its_place_in_the_map() -> None:
    rows = table_rows()
    assert [m for m in sorted(modules()) if not named_by(rows, m)] == []


def test_every_place_in_the_map_exists() -> None:
    missing = []
    for name in table_rows():
        target = ROOT / name if name.startswith("searchapp/") else PACKAGE / name
        if name == "migrations/":
            target = ROOT / "migrations"
        if not (target.is_dir() if name.endswith("/") else target.is_file()):
            missing.append(name)
    assert missing == []
