"""Section paths: the headings in force where each passage starts."""

from __future__ import annotations

from searchapp.ingest.sections import MAX_HEADING_CHARS, section_paths, shown_with_title
from searchapp.types import Heading, Span


def spans_at(*starts: int) -> list[Span]:
    return [Span(s, s + 5, 1) for s in starts]


def test_a_heading_ends_the_sections_of_its_level_and_deeper() -> None:
    headings = [Heading(0, 1, "Guide"), Heading(10, 2, "Install"), Heading(20, 3, "From source"),
                Heading(40, 2, "Usage"), Heading(60, 4, "Deep"), Heading(80, 1, "Reference")]
    got = section_paths(headings, spans_at(0, 12, 25, 45, 65, 85))
    assert got == ["Guide", "Guide > Install", "Guide > Install > From source", "Guide > Usage",
                   "Guide > Usage > Deep", "Reference"]


def test_text_before_any_heading_has_none() -> None:
    headings = [Heading(30, 1, "Fields"), Heading(50, 2, "Deprecated  fields")]
    assert section_paths(headings, spans_at(0, 31, 55)) == ["", "Fields", "Fields > Deprecated fields"]


def test_shown_with_the_title_once() -> None:
    assert shown_with_title("Fields", "fields > Deprecated fields") == "Fields > Deprecated fields"
    assert shown_with_title("Guide", "Install") == "Guide > Install"
    assert shown_with_title("", "Install > Linux") == "Install > Linux"
    assert shown_with_title("Guide", "") == "Guide"


def test_a_passage_starting_on_a_heading_is_under_it_and_long_headings_are_cut() -> None:
    long = "x" * (MAX_HEADING_CHARS + 50)
    got = section_paths([Heading(10, 2, long)], spans_at(9, 10))
    assert got[0] == ""
    assert len(got[1]) == MAX_HEADING_CHARS and got[1].endswith("…")


def test_no_headings_no_sections() -> None:
    assert section_paths([], spans_at(0, 10)) == ["", ""]


def test_the_encoder_sees_the_section_before_the_passage_within_the_limit() -> None:
    from searchapp.ingest.sections import CONTEXT_CHARS, passage_inputs

    text = "alpha beta gamma delta"
    spans = [Span(0, 10, 4), Span(11, 22, 300)]
    sections = ["Guide > Install", "Guide > " + "y" * 500]
    got = passage_inputs(text, spans, sections, "section", limit=512)
    assert got[0] == "Guide > Install\nalpha beta"
    assert got[1] == sections[1][:CONTEXT_CHARS] + "\ngamma delta"
    # Over the model's limit with the context: the passage alone, never cut.
    assert passage_inputs(text, spans, sections, "section", limit=300 + 10)[1] == "gamma delta"
    assert passage_inputs(text, spans, sections, "none", limit=512) == ["alpha beta", "gamma delta"]
    assert passage_inputs(text, spans, ["", ""], "section", limit=512) == ["alpha beta", "gamma delta"]


def test_an_index_made_before_the_setting_embedded_passages_alone() -> None:
    from searchapp.config import IndexConfig

    rows = {k: v for k, v in IndexConfig().to_settings().items() if k != "passage_context"}
    assert IndexConfig.from_settings(rows).passage_context == "none"
    assert IndexConfig.from_settings(IndexConfig().to_settings()).passage_context == "section"
