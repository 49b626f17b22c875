"""The bundled sample (data/sample), what a newcomer searches first, describes itself truly: its README.txt lists
exactly the files there, and is what scripts/make_sample.py writes."""

from __future__ import annotations

import runpy
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


def test_the_sample_readme_lists_exactly_its_files_and_is_what_the_script_writes() -> None:
    text = (SAMPLE / "README.txt").read_text()
    listed = {line.split()[0] for line in text.splitlines() if line and not line[0].isspace()
              and (SAMPLE / line.split()[0]).suffix and "  " in line}
    assert listed == {p.name for p in SAMPLE.iterdir()}
    script = runpy.run_path(str(SAMPLE.parents[1] / "scripts" / "make_sample.py"), run_name="not_main")
    assert script["DESCRIPTION"] == text


def test_the_sample_s_html_headings_are_its_questions_not_their_answers() -> None:
    # Each <h2> held its question and the whole answer (the script took a heading's block to its blank line): a
    # hit's "section" was some 200-350 characters of answer.
    from searchapp.ingest.formats.load import load_document

    headings = load_document(SAMPLE / "faq.html").headings
    assert len(headings) >= 5 and all(len(h.text) <= 80 and h.text.endswith(("?", "questions")) for h in headings)
    script = runpy.run_path(str(SAMPLE.parents[1] / "scripts" / "make_sample.py"), run_name="not_main")
    assert script["blocks"]("## A question?\nIts answer,\non two lines.") == [
        ("heading", "A question?"), ("paragraph", "Its answer, on two lines.")]
    # The page's own heading is its h1 (each hit's section read "Frequently asked questions > Frequently asked
    # questions > ...": the title, then the same words as an h2).
    loaded = load_document(SAMPLE / "faq.html")
    assert headings[0].level == 1 and headings[0].text == loaded.title
    assert all(h.level == 2 for h in headings[1:])
    made = script["to_html"]("# Questions\n\n## A question?\n\nIts answer.")
    assert "<h1>Questions</h1>" in made and "<h2>A question?</h2>" in made
