"""The snippet window: the query's terms as the lexical side analyses them, the best window for them, offsets
into the document."""

from __future__ import annotations

from searchapp.query.snippets import WINDOW, QueryTerms, best_window, snippet
from searchapp.store.lexical import stems

FILLER = "Tomatoes want water twice a week in the summer months. " * 4


def marked(text: str, offset: int, query: str) -> list[str]:
    sn, _ = snippet(QueryTerms(query), text, offset)
    return [text[s - offset : e - offset] for s, e in sn.highlights]


def test_stems_are_fts5_porter_stems_lower_cased_and_accent_folded() -> None:
    assert stems(["Running", "keys", "Café", "the"]) == [
        frozenset({"run"}), frozenset({"kei"}), frozenset({"cafe"}), frozenset({"the"}),
    ]


def test_window_is_around_the_match_not_the_start_and_offsets_are_document_offsets() -> None:
    text = FILLER + "To rotate the signing keys, run keyctl rotate quarterly. " + FILLER
    offset = 1000  # the passage starts at character 1000 of its document
    sn, found = snippet(QueryTerms("how do I rotate the signing keys?"), text, offset)
    assert sn.end - sn.start <= WINDOW
    window = text[sn.start - offset : sn.end - offset]
    assert "rotate the signing keys" in window
    assert sn.start > offset  # not the passage's first characters
    assert [text[s - offset : e - offset] for s, e in sn.highlights] == ["rotate", "signing", "keys", "rotate"]
    assert QueryTerms("how do I rotate the signing keys?").matched(found) == ["rotate", "signing", "keys"]
    # cut at word boundaries
    assert not text[sn.start - offset - 1].isalnum() and not text[sn.end - offset].isalnum()


def test_stems_match_case_insensitively_on_word_boundaries_only() -> None:
    text = "Keys and KEY rotation; the keyboard and monkeys are not matches."
    assert marked(text, 0, "key") == ["Keys", "KEY"]
    assert marked("Running runners ran", 0, "run") == ["Running"]  # porter: runner -> runner, ran -> ran


def test_window_prefers_more_distinct_terms_over_repeats() -> None:
    text = "keys keys keys keys. " + FILLER + "signing keys are rotated. " + FILLER
    sn, _ = snippet(QueryTerms("signing keys"), text, 0)
    assert "signing keys" in text[sn.start : sn.end]


def test_no_match_gives_the_start_and_a_short_passage_is_whole() -> None:
    text = FILLER * 2
    start, end = best_window(text, [])
    assert start == 0 and end <= WINDOW
    assert best_window("short text", []) == (0, len("short text"))
    sn, _ = snippet(QueryTerms("zebra"), "short text", 7)
    assert (sn.start, sn.end, sn.highlights) == (7, 17, ())
