"""A passage's clean text (clean.py): markup blanks collapsed, include directives' lines dropped, each character
traced back to its place in the exact text."""

from __future__ import annotations

from searchapp.clean import clean_map, clean_text
from searchapp.ingest.formats.load import load_document

PAGE = (
    "# Request bodies\n\n"
    "Declare a **request body** with a [Pydantic](https://docs.pydantic.dev) model.\n\n\n\n"
    "{* ../../docs_src/body/tutorial001_py310.py hl[5:9] *}\n\n"
    '--8<-- "docs/en/docs/snippets/note.md"\n\n'
    "  - First   item\n"
    "  - Second item\n"
)


def test_blanks_collapse_and_include_lines_go_while_each_character_keeps_its_origin(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "body.md"
    path.write_text(PAGE, encoding="utf-8")
    text = load_document(path).text  # markup blanked to spaces of the same length: the stored text
    assert "  " in text
    clean, origins = clean_map(text)
    assert clean == ("Request bodies\n\nDeclare a request body with a Pydantic model.\n\nFirst item\nSecond item")
    assert len(origins) == len(clean) and origins == sorted(origins)
    for ch, origin in zip(clean, origins, strict=True):
        assert ch == text[origin] or (ch == " " and text[origin].isspace()) or (ch == "\n" and text[origin] == "\n")
    assert clean_text(text) == clean


def test_text_without_markup_is_unchanged_and_blank_text_is_empty() -> None:
    assert clean_text("One line.\nTwo lines.\n\nA paragraph.") == "One line.\nTwo lines.\n\nA paragraph."
    assert clean_text("   \n\n\t \n") == ""
    assert clean_text("{* a.py *}") == ""
