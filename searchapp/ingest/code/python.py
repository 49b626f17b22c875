"""Python outlined by its own parser (``ast``): classes and functions, nested ones under them, at any statement
level (under ``if``, ``try``, ``with`` too), each with its decorators; a file ``ast`` cannot read, or one too large
to parse cheaply, falls back to blank-line blocks at column 0 (``rules.blocks``)."""

from __future__ import annotations

import ast
import warnings

from searchapp.ingest.code import rules
from searchapp.ingest.code.definition import MAX_DEFINITIONS, Definition

# ast holds a few hundred bytes per node and its parser runs in C with no way to stop it: past this many
# characters (generated code, a hostile file) the file is outlined by line rules, linear and lighter.
MAX_AST_CHARS = 2**18
# Classes and functions nested deeper than this are part of their enclosing definition (a heading has at most six
# levels, the file's name being the first).
MAX_DEPTH = 4
_DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
# The statement fields that hold statements: definitions under them are still found.
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def outline(text: str) -> list[Definition]:
    """The classes and functions of Python ``text`` (lines from 0, each starting at its first decorator); those of
    :func:`rules.blocks` when the file is larger than :data:`MAX_AST_CHARS` or ``ast`` cannot read it."""
    if len(text) > MAX_AST_CHARS:
        return rules.blocks(text)
    try:
        with warnings.catch_warnings():
            # Invalid escape sequences and the like are warnings for the file's author, not the user.
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        # Not Python this interpreter reads (another version's syntax, a template, nesting past the parser's
        # limits): still outlined, by the line rule.
        return rules.blocks(text)
    return _walk(tree)


def _walk(tree: ast.Module) -> list[Definition]:
    """The definitions of ``tree`` in the order met, found with a stack (a deep tree never recurses here)."""
    found: list[Definition] = []
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack and len(found) < MAX_DEFINITIONS:
        node, depth = stack.pop()
        children: list[tuple[ast.AST, int]] = []
        for field in _BODIES:
            for child in getattr(node, field, None) or ():
                if isinstance(child, _DEFINITIONS):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    found.append(Definition(first - 1, depth, child.name, (child.end_lineno or child.lineno) - 1))
                    if depth + 1 <= MAX_DEPTH:
                        children.append((child, depth + 1))
                elif isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
                    children.append((child, depth))
        stack.extend(reversed(children))
    return found
