"""Every markup reader runs in linear time (searchapp.ingest.markup): no pattern backtracks over a run of the
characters it is made of, no scan reads the same characters again for each match. Hostile lines of each syntax
(runs of its special characters, its block openers, mixes of inline openers and closers, 100 KB and 1 MB lines)
are read within a CPU-time bound per kilobyte, through every reader.

The bounds are CPU time of this process, not wall time, so a loaded machine does not make them fail; a reader that
backtracks is interrupted at its bound (the regex engine checks for signals) rather than left to run for hours."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from searchapp.ingest.markup import read_asciidoc, read_markdown, read_rst
from searchapp.ingest.markup.blanks import Reading

READERS: dict[str, Callable[[str], Reading]] = {"md": read_markdown, "rst": read_rst, "adoc": read_asciidoc}

needs_cpu_timer = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer (POSIX)")


@contextmanager
def cpu_seconds(limit: float) -> Iterator[None]:
    """Run the block with at most ``limit`` seconds of this process's CPU time; past it, TimeoutError."""

    def stop(signum: int, frame: object) -> None:
        raise TimeoutError(f"over {limit:.1f} s of CPU time")

    previous = signal.signal(signal.SIGPROF, stop)
    signal.setitimer(signal.ITIMER_PROF, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def read_within(limit: float, text: str, readers: tuple[str, ...] = tuple(READERS)) -> None:
    """Each of ``readers`` reads ``text`` whole within ``limit`` seconds of CPU time."""
    for name in readers:
        started = time.process_time()
        try:
            with cpu_seconds(limit):
                reading = READERS[name](text)
        except TimeoutError:
            pytest.fail(f"{name} took over {limit:.1f} s of CPU time on {len(text):,} characters: {text[:60]!r}...")
        assert len(reading.text) == len(text), name
        assert time.process_time() - started <= limit, name


# --- the lines reported, and their neighbours ----------------------------------------------------------------

REPORTED = {
    # Markdown attribute lists: exponential backtracking (116 bytes ran for hours).
    "md-attribute-list": "# N\n\nSet {" + "a=" * 44 + "a\n",
    "md-attribute-list-after-a-name": "{#a" + "a=" * 44 + "a",
    # "/// name | Title" and ":::name Title" and then blanks: "(.*?)[ \t]*$", quadratic.
    "md-slash-block-blanks": "/// note | T" + " " * 200_000 + "x\n",
    "md-slash-block-no-title": "///" + " " * 200_000 + "!\n",
    "md-colon-block-blanks": ":::note T" + " " * 200_000 + "x\n",
    "md-reference-blanks": "[x]:" + " " * 200_000 + "<\n",
    # Many image openers, then many links: the openers were filtered at each link, quadratic.
    "md-image-openers-and-links": "![" * 50_000 + "[a](b)" * 50_000,
    # A line of blanks under 32 nested list items: measured again, a character at a time, for each of them.
    "md-blanks-under-nested-lists": "- " * 32 + "x\n" + "\t" * 1_000_000 + "x\n",
    # reStructuredText reference names: a name may start after each dot, each start read 257 characters.
    "rst-reference-names": "a." * 2_000_000,
    # AsciiDoc macros inside macros' targets: each read up to 2,048 characters again.
    "adoc-macro-targets": "link:" * 400_000,
    # AsciiDoc delimited blocks left open: each paragraph's end searched them all for a table.
    "adoc-open-blocks": "====\na\n\n****\na\n\n" * 15_000,
}


@needs_cpu_timer
@pytest.mark.parametrize("name", REPORTED)
def test_each_reported_hostile_input_reads_in_linear_time(name: str) -> None:
    # Five seconds of CPU for up to 2 MB, each reader (the slowest here takes about one); before: minutes to hours.
    read_within(5.0, REPORTED[name])


def test_an_rst_file_ending_in_a_bare_bullet_is_read() -> None:
    # A last line holding only a bullet (no newline after it) raised IndexError, which failed the whole ingest.
    for bullet in "-*+\u2022":
        for text in (bullet, f"Title\n=====\n\nText\n\n{bullet}", f"  {bullet}"):
            reading = read_rst(text)
            assert len(reading.text) == len(text) and reading.text[-1] == " "  # a bullet, blanked as any other
