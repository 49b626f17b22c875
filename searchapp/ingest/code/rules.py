"""Line rules that outline a file without parsing it, each one pass over its lines (no regular expression, so no
backtracking): blank-line separated blocks at column 0 (the generic rule, and Python's fallback), TOML and INI
``[sections]``, YAML's top-level keys, Makefile targets, Dockerfile stages (``FROM``)."""

from __future__ import annotations

from collections.abc import Callable

from searchapp.ingest.code.definition import MAX_DEFINITIONS, Definition, lines, name_of

# Lines that say nothing of what follows them as a name: a block is named by its first other line.
_COMMENTS = ("#", "//", "/*", "*", "--", ";", "@")


def blocks(text: str) -> list[Definition]:
    """Each run of lines that starts at column 0 after a blank line (or at the file's start) and is not a comment,
    named by its first line that is not a comment: a top-level function, class or statement group in most
    languages."""
    found: list[Definition] = []
    after_blank = True
    pending: int | None = None  # the first line of a block whose lines so far are comments
    for number, start, end in lines(text):
        line = text[start:end]
        if not line.strip():
            after_blank, pending = True, None
            continue
        top = not line[0].isspace()
        if after_blank and top:
            pending = number
        after_blank = False
        if pending is not None and top and not line.startswith(_COMMENTS):
            found.append(Definition(pending, 0, name_of(line)))
            pending = None
            if len(found) >= MAX_DEFINITIONS:
                break
    return found


def sections(text: str) -> list[Definition]:
    """TOML tables and INI sections: a line ``[name]`` or ``[[name]]`` (a comment after it allowed)."""
    return _each_line(text, _section)


def _section(line: str) -> str | None:
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    close = stripped.rfind("]")
    return stripped[: close + 1] if close > 0 else None


def yaml_keys(text: str) -> list[Definition]:
    """YAML's top-level keys: a line at column 0 ``key:`` (a value after it or not), documents' ``---`` aside."""
    return _each_line(text, _yaml_key)


def _yaml_key(line: str) -> str | None:
    if not line or line[0] in " \t#-.[{\"'" or ":" not in line:
        return None
    key, _, rest = line.partition(":")
    return key.strip() or None if rest == "" or rest[0] in " \t" else None


def make_targets(text: str) -> list[Definition]:
    """Makefile rules: a line at column 0 ``target ...: prerequisites`` (not an assignment ``:=``, ``::=``, not a
    special target such as ``.PHONY``, not a recipe line, which starts with a tab)."""
    return _each_line(text, _make_target)


def _make_target(line: str) -> str | None:
    if not line or line[0] in " \t#.":
        return None
    targets, colon, rest = line.partition(":")
    if not colon or "=" in targets or rest.startswith(("=", ":=")) or not targets.strip():
        return None
    return name_of(targets)


def docker_stages(text: str) -> list[Definition]:
    """Dockerfile stages: each ``FROM`` line (``FROM python:3.12 AS build``)."""
    return _each_line(text, _docker_stage)


def _docker_stage(line: str) -> str | None:
    stripped = line.lstrip()
    return name_of(stripped) if stripped[:5].upper() == "FROM " else None


def _each_line(text: str, rule: Callable[[str], str | None]) -> list[Definition]:
    """A definition at each line that ``rule`` names (it gets the line, returns its name or ``None``)."""
    found: list[Definition] = []
    for number, start, end in lines(text):
        name = rule(text[start:end])
        if name:
            found.append(Definition(number, 0, name))
            if len(found) >= MAX_DEFINITIONS:
                break
    return found
