"""The package's layers point one way: no import circle, nothing below the facade imports it, stores never
import the query layer. Every import statement counts: top-level, inside functions and under TYPE_CHECKING."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "searchapp"
# Modules that may use an Index: the facade itself and the edges built on it.
FACADE = ("searchapp", "searchapp.__main__", "searchapp.index", "searchapp.eval_index", "searchapp.cli",
          "searchapp.server", "searchapp.client", "searchapp.adapters")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The searchapp modules ``path`` imports (a ``from X import Y`` of a submodule Y counts as Y)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in known else base)
    return {m for m in out if m in known and m != name}


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports(name, path, known) for name, path in found.items()}


def in_facade(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FACADE if f != "searchapp") or name in FACADE


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a list of modules, or ``None``."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_walk_sees_the_package() -> None:
    edges = graph()
    assert len(edges) > 30 and "searchapp.config" in edges["searchapp.index"]
    assert "searchapp.index" in edges["searchapp"]  # a package's own imports count


def test_no_import_circle() -> None:
    cycle = find_cycle(graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_nothing_below_the_facade_imports_it() -> None:
    bad = sorted(
        f"{name} imports {dep}"
        for name, deps in graph().items()
        if not in_facade(name)
        for dep in deps
        if in_facade(dep)
    )
    assert not bad, "; ".join(bad)


def test_stores_never_import_the_query_layer() -> None:
    bad = sorted(
        f"{name} imports {dep}"
        for name, deps in graph().items()
        if name.startswith("searchapp.store")
        for dep in deps
        if dep.startswith("searchapp.query")
    )
    assert not bad, "; ".join(bad)


def test_the_cycle_finder_finds_a_circle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
