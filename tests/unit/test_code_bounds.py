"""Every outliner of code and configuration files (searchapp.ingest.code) reads hostile text in linear time and
never raises: runs of braces, quotes and comment openers, unbalanced braces, deep nesting, a 5 MB single line, and
Python that its parser refuses (nesting past its limits, a NUL, another version's syntax) or that is too large for
it. Bounds are CPU time of this process (a loaded machine does not fail them); a quadratic rule takes minutes on a
megabyte."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from searchapp.ingest.code import python
from searchapp.ingest.code.definition import MAX_DEFINITIONS
from searchapp.ingest.code.outline import OUTLINERS, outline
from searchapp.ingest.formats.load import load_document
from tests.cpu_time import cpu_seconds, needs_cpu_timer

# Seconds of CPU time per megabyte of hostile text: about four times the slowest case measured (a run of quotes
# through the brace outliner, 0.7 s a megabyte).
CPU_PER_MB = 3.0
MB = 2**20
# The hostile texts' size: a quarter of a megabyte is read in a fraction of a second by a linear rule and would
# take minutes by a quadratic one.
SIZE = MB // 4



def outlined_within(text: str, outliners: tuple[str, ...]) -> None:
    limit = max(0.5, CPU_PER_MB * len(text) / MB)
    for name in outliners:
        started = time.process_time()
        try:
            with cpu_seconds(limit):
                headings = outline(text, name, "f")
        except TimeoutError:
            pytest.fail(f"{name} took over {limit:.1f} s of CPU time on {len(text):,} characters: {text[:40]!r}")
        assert time.process_time() - started <= limit, name
        assert len(headings) <= 2 * MAX_DEFINITIONS + 1, name
        assert all(0 <= h.start < len(text) and 1 <= h.level <= 6 and h.text for h in headings), name
        assert [h.start for h in headings] == sorted(h.start for h in headings), name


HOSTILE = {
    "opening braces": "{" * SIZE,
    "closing braces": "}" * SIZE,
    "braces a line": "{\n" * (SIZE // 2),
    "unbalanced": "x {\n" * (SIZE // 8) + "}\n}\n}\n" * (SIZE // 16),
    "double quotes": '"' * SIZE,
    "single quotes": "'" * SIZE,
    "backquotes": "`" * SIZE,
    "comment openers": "/*" * (SIZE // 2),
    "slashes": "/" * SIZE,
    "backslashes": "\\" * SIZE,
    "hashes": "#" * SIZE,
    "keys": "a:" * (SIZE // 2),
    "brackets": "[" * SIZE,
    "everything": "{'\"`/*#[:\n}" * (SIZE // 12),
    "a definition a line": "x{}\n" * (SIZE // 4),
    "comment lines": "# c\n" * (SIZE // 4) + "def f():\n    pass\n",
    "deep indentation": "".join(" " * (i % 200) + "if x:\n" for i in range(SIZE // 100)),
}


@needs_cpu_timer
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_every_outliner_reads_hostile_text_in_linear_time(case: str) -> None:
    outlined_within(HOSTILE[case], tuple(OUTLINERS))


@needs_cpu_timer
@pytest.mark.parametrize("char", ["{", '"', "a"])
def test_a_5_mb_single_line(char: str) -> None:
    outlined_within(char * 5 * MB, ("python", "braces", "json"))


@needs_cpu_timer
@pytest.mark.parametrize("source", [
    "(" * 100_000,  # past the parser's nesting limit
    "x = " + "a+" * 100_000 + "a\n",  # a tree deeper than the recursion limit
    "".join("    " * i + "def f():\n" for i in range(120)) + "    " * 120 + "pass\n",  # too many indentation levels
    "".join("    " * i + "if x:\n" for i in range(30)) + "    " * 30 + "pass\n",  # too many nested blocks
    "def f():\n    return 1\x00\n",  # a NUL
    'def f():\n    """never closed\n' * 1000,
    "print 'python 2'\n\ndef g():\n    pass\n",
    "x = '\\d'\n\nclass A:\n    pass\n",  # an invalid escape: a warning, never printed
    "def f():\n    pass\n" * (python.MAX_AST_CHARS // 10),  # over the size ast is given
])
def test_python_the_parser_refuses_or_is_not_given_is_outlined_by_blocks(source: str) -> None:
    started = time.process_time()
    with cpu_seconds(5.0), _no_warnings():
        found = python.outline(source)
    assert time.process_time() - started <= 5.0
    assert len(found) <= MAX_DEFINITIONS
    outlined_within(source, ("python",))


@contextmanager
def _no_warnings() -> Iterator[None]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def test_a_hostile_code_file_is_loaded_not_raised(tmp_path: Path) -> None:
    for name, text in [("deep.py", "(" * 100_000), ("braces.js", "}" * 100_000 + "{" * 100_000),
                       ("keys.json", '{"a": ' * 50_000), ("Makefile", ":" * 100_000)]:
        path = tmp_path / name
        path.write_text(text)
        doc = load_document(path)
        assert doc.text == text and doc.headings[0].text == name
