"""The outliners by language (a registry: ``OUTLINERS``), and a file's definitions made headings: the file's name
at level 1, each definition at its depth's level below it, and, where a definition ends before its parent does,
the parent's heading again where the parent's own code goes on (so the code after a class is not under it)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from searchapp.ingest.code import braces, python, rules
from searchapp.ingest.code.definition import Definition, lines, with_comments
from searchapp.types import Heading

Outliner = Callable[[str], list[Definition]]

# Larger texts are not outlined (their passages have the file's name as their section alone): outliners are
# linear, but a pass in Python over tens of megabytes of characters would cost seconds a file.
MAX_OUTLINE_CHARS = 8 * 2**20
# A definition this deep is at heading level 2 + depth; the file's name is level 1.
_FIRST_LEVEL = 2

OUTLINERS: dict[str, Outliner] = {
    "python": python.outline,
    "braces": braces.outline,
    "rust": partial(braces.outline, syntax=braces.RUST),
    "json": braces.json_keys,
    "blocks": rules.blocks,
    "sections": rules.sections,
    "yaml": rules.yaml_keys,
    "make": rules.make_targets,
    "docker": rules.docker_stages,
}
# The lines above a definition that belong to it (comments, decorators, annotations, attributes), per outliner.
PREFACES: dict[str, tuple[str, ...]] = {
    "python": ("#", "@"),
    "braces": ("//", "/*", "*", "@", "#["),
    "rust": ("//", "/*", "*", "#["),
    "json": (),
    "blocks": ("#", "//", "/*", "*", "@"),
    "sections": ("#", ";"),
    "yaml": ("#",),
    "make": ("#",),
    "docker": ("#",),
}


def outline(text: str, outliner: str, file_name: str) -> tuple[Heading, ...]:
    """The headings of a code or configuration ``text`` by the named outliner (a key of :data:`OUTLINERS`): the
    file's name at its start, then its definitions, with their comments above them."""
    if not text:
        return ()
    top = Heading(0, 1, file_name)
    if len(text) > MAX_OUTLINE_CHARS:
        return (top,)
    found = sorted(OUTLINERS[outliner](text), key=lambda d: d.start)
    found = with_comments(text, found, PREFACES[outliner])
    return (top, *_headings(text, found, top))


def _headings(text: str, found: list[Definition], top: Heading) -> list[Heading]:
    """``found`` (sorted by start) as headings at their lines' offsets, with the parent's heading again after each
    definition whose end is known, where code of its parent follows it."""
    marks: list[tuple[int, int, int, str]] = []  # (line, order, level, text): a parent before a child on one line
    enclosing: list[tuple[Definition, int]] = []  # the definitions open at this point, with their levels
    for definition in found:
        while enclosing and _ended(enclosing[-1][0], definition.start):
            enclosing.pop()
        level = min(_FIRST_LEVEL + definition.depth, 6)
        marks.append((definition.start, 1, level, definition.name))
        parent = enclosing[-1] if enclosing else None
        if definition.end is not None and (parent is None or _within(parent[0], definition.end + 1)):
            again = (top.level, top.text) if parent is None else (parent[1], parent[0].name)
            marks.append((definition.end + 1, 0, *again))
        enclosing.append((definition, level))
    return _at_offsets(text, _resumed_only_where_code(text, marks))


def _ended(definition: Definition, line: int) -> bool:
    return definition.end is not None and definition.end < line


def _within(definition: Definition, line: int) -> bool:
    return definition.end is None or line <= definition.end


def _resumed_only_where_code(text: str, marks: list[tuple[int, int, int, str]]) -> list[tuple[int, int, int, str]]:
    """The marks with each parent's heading again moved down to the first line after the definition that is not
    blank, and dropped where a definition starts there or before (it names what follows)."""
    starts = sorted({line for line, order, _, _ in marks if order == 1})
    blank = _blank_lines(text, {line for line, order, _, _ in marks if order == 0})
    out = []
    for line, order, level, name in sorted(marks):
        if order == 0:
            while line in blank:
                line += 1
            if _next_start(starts, line) == line:
                continue
        out.append((line, order, level, name))
    out.sort()
    return out


def _blank_lines(text: str, after: set[int]) -> set[int]:
    """The blank lines in the runs of blank lines that start at the lines in ``after``."""
    blank: set[int] = set()
    run = False
    for number, start, end in lines(text):
        if number in after or (run and number - 1 in blank):
            run = not text[start:end].strip()
            if run:
                blank.add(number)
        else:
            run = False
    return blank


def _next_start(starts: list[int], line: int) -> int | None:
    from bisect import bisect_left

    at = bisect_left(starts, line)
    return starts[at] if at < len(starts) else None


def _at_offsets(text: str, marks: list[tuple[int, int, int, str]]) -> list[Heading]:
    """The marks (sorted by line) as headings at their lines' offsets; a line past the text's end has none."""
    out: list[Heading] = []
    wanted = iter(marks)
    mark = next(wanted, None)
    for number, start, _ in lines(text):
        while mark is not None and mark[0] == number:
            out.append(Heading(start, mark[2], mark[3]))
            mark = next(wanted, None)
        if mark is None:
            break
    return [h for h in out if h.start < len(text)]
