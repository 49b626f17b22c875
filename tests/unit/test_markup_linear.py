"""Every markup reader runs in linear time (searchapp.ingest.markup): no pattern backtracks over a run of the
characters it is made of, no scan reads the same characters again for each match. Hostile lines of each syntax
(runs of its special characters, its block openers, mixes of inline openers and closers, 100 KB and 1 MB lines)
are read within a CPU-time bound per kilobyte, through every reader.

The bounds are CPU time of this process, not wall time, so a loaded machine does not make them fail; a reader that
backtracks is interrupted at its bound (the regex engine checks for signals) rather than left to run for hours."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from searchapp.ingest.markup import read_asciidoc, read_markdown, read_rst
from searchapp.ingest.markup.blanks import Reading
from tests.cpu_time import cpu_seconds, needs_cpu_timer

READERS: dict[str, Callable[[str], Reading]] = {"md": read_markdown, "rst": read_rst, "adoc": read_asciidoc}
# Seconds of CPU time a reader may take per kilobyte of hostile input: about ten times what the slowest hostile
# line takes (2 to 4 microseconds a character); a quadratic rule takes minutes on 100 KB, an exponential one hours.
CPU_PER_KB = 0.02
LINE = 100_000



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


def read_within_bound(text: str) -> None:
    """Each reader reads ``text`` within ``CPU_PER_KB`` per kilobyte (at least a second)."""
    read_within(max(1.0, CPU_PER_KB * len(text) / 1000), text)


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
    # Five seconds of CPU for up to 4 MB, each reader (the slowest here takes about one); before: 5.6 s to hours.
    read_within(5.0, REPORTED[name])


def test_an_rst_file_ending_in_a_bare_bullet_is_read() -> None:
    # A last line holding only a bullet (no newline after it) raised IndexError, which failed the whole ingest.
    for bullet in "-*+\u2022":
        for text in (bullet, f"Title\n=====\n\nText\n\n{bullet}", f"  {bullet}"):
            reading = read_rst(text)
            assert len(reading.text) == len(text) and reading.text[-1] == " "  # a bullet, blanked as any other


# --- runs of each special character ----------------------------------------------------------------------------

SPECIAL = {
    "md": "#>-+*_`~[]()!<>{}=|:/\\\"'.^&@",
    "rst": "=-`:_*|.<>[]#+\\'\"~^()",
    "adoc": "=:*_#`+[]<>{}./|,!-\\'\"",
}


@needs_cpu_timer
@pytest.mark.slow
@pytest.mark.parametrize("syntax", SPECIAL)
def test_a_run_of_each_special_character_reads_in_linear_time(syntax: str) -> None:
    # Each special character alone, before a letter and before a blank: 100 KB lines, every reader.
    for char in SPECIAL[syntax]:
        run = char * 40_000 + (char + "a") * 15_000 + (char + " ") * 15_000
        read_within_bound(run + "x")


# --- generated lines: block openers, then runs and mixes of inline openers and closers -------------------------

OPENERS = {
    "md": ["", "# ", "> ", "- ", "1. ", "!!! note ", '=== "', "/// note | ", "///", ":::note ", ":::note[",
           "::: a.b ", "[x]: ", "[^1]: ", "--8<-- ", "<!-- ", "```", "    ", "<h1>", "| a | ", "{", "{: ", "{a="],
    "rst": ["", ".. ", ".. note:: ", ".. |x| image:: ", ".. _x: ", ".. [1] ", ":field: ", "- ", "| ", "+--",
            ">>> ", "::", "`", ":role:`"],
    "adoc": ["", "= ", "== ", ":attr: ", "[source]", "[[a]]", ".Title ", "NOTE: ", "* ", ". ", "image::", "|===",
             "----", "// ", "link:", "<<"],
}
INLINE = {
    "md": ["![", "[", "]", "](", "(", ")", "[a](b)", "![a](b)", "[a][b]", "{", "}", "{a=", "{#a", "a=", "`", "``",
           "<", "<a ", "<!--", "**", "*a", "_", "~~", "\\", "|", "[^1]", "<http:"],
    "rst": ["`", "``", ":r:`", "`_", "__", "|", "|a|", "[", "]_", "[#]_", "a.", "a_", "_", "*", "**", "\\", "<",
            ">`_", ".. "],
    "adoc": ["link:", "xref:", "https:", "image:", "[", "]", "<<", ">>", "<<a,", "[[", "]]", "{", "}", "{a", "`",
             "+", "++", "+++", "*", "_", "#", "\\", "|"],
}


@st.composite
def hostile_line(draw: st.DrawFn, syntax: str) -> str:
    """A block opener, then about 100 KB of one or more short units repeated: runs of special characters,
    inline openers and closers, alternating (``![[a](b)![[a](b)...``) or in halves (``![![...[a](b)[a](b)...``)."""
    opener = draw(st.sampled_from(OPENERS[syntax]))
    unit = st.one_of(st.text(st.sampled_from(SPECIAL[syntax] + "a1 \t"), min_size=1, max_size=3),
                     st.sampled_from(INLINE[syntax]))
    units = draw(st.lists(unit, min_size=1, max_size=3))
    if draw(st.booleans()):
        body = "".join(units) * (LINE // len("".join(units)) + 1)
    else:
        share = LINE // len(units)
        body = "".join((u * (share // len(u) + 1))[:share] for u in units)
    return opener + body[:LINE] + "x"


@needs_cpu_timer
@pytest.mark.slow
@settings(max_examples=30, deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(line=st.sampled_from(list(SPECIAL)).flatmap(hostile_line))
@example(line=REPORTED["md-attribute-list"])
@example(line="/// note | T" + " " * LINE + "x")
@example(line=":::note T" + " " * LINE + "x")
@example(line="[x]:" + " " * LINE + "<")
def test_generated_hostile_lines_read_in_linear_time(line: str) -> None:
    read_within_bound(line)


# --- a 1 MB single line of each kind ---------------------------------------------------------------------------


def one_megabyte_line(syntax: str) -> str:
    """A 1 MB line: the syntax's inline openers and closers, each repeated over an equal share, then mixed."""
    units = INLINE[syntax]
    share = 500_000 // len(units)
    halves = "".join((u * (share // len(u) + 1))[:share] for u in units)
    mixed = "".join(units) * (500_000 // len("".join(units)) + 1)
    return (OPENERS[syntax][1] + halves + mixed)[:1_000_000]


@needs_cpu_timer
@pytest.mark.parametrize("syntax", READERS)
def test_a_one_megabyte_line_is_read_in_seconds(syntax: str) -> None:
    # 20 s of CPU at most (one to two here); before, the Markdown line did not finish in 20 s.
    read_within(20.0, one_megabyte_line(syntax), readers=(syntax,))
