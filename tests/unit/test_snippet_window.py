"""The snippet window: the query's terms as the lexical side analyses them, the best window for them, offsets
into the document."""

from __future__ import annotations

from searchapp.analysis import stems
from searchapp.query.snippets import WINDOW, QueryTerms, best_window, snippet

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


def _vocabulary() -> list[str]:
    """Words built to exercise Porter's rewrites at the front of short words (y -> i after a vowel, "ies" ->
    "i", "eing" -> "e"), in both cases, plus digits and accented words."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    suffixes = ["", "y", "ies", "ied", "yed", "ying", "ing", "ed", "s", "sses", "e", "eed", "ational", "ly", "izer"]
    words = [a + b + s for a in letters for b in letters for s in suffixes]
    words += [w.upper() for w in words[::7]] + ["eyed", "Eyed", "ayes", "ies", "eing", "2010s", "b12", "Éclair",
                                               "naïve", "Straße", "ﬁnance"]
    return words


def test_the_word_prefilter_never_drops_a_word_the_tokenizer_would_match() -> None:
    from searchapp.query import snippets

    words = _vocabulary()
    for word, word_stems in zip(words, stems(words), strict=True):
        for s in word_stems:
            # A query term stemming to s must let this word through.
            head = word[:2].lower()
            assert not word.isascii() or {head, head[:1]} & set(snippets._heads(s)), (word, s)


def test_find_many_equals_analysing_every_word(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from searchapp.query import snippets

    words = _vocabulary()
    texts = [" ".join(words[i : i + 300]) for i in range(0, len(words), 300)]
    queries = ["eyed keys", "the ies", "Éclair naïve", "eing ayes 2010s", "abational relational", "ﬁnance Straße"]
    fast = [QueryTerms(q).find_many(texts) for q in queries]
    monkeypatch.setattr(snippets.QueryTerms, "_candidates", lambda self, words: list(words))
    slow = [QueryTerms(q).find_many(texts) for q in queries]
    assert fast == slow
    assert all(any(found) for found in fast)  # every query matches somewhere, so the comparison is not empty


def test_find_many_finds_every_word_whose_stems_meet_the_query_and_no_piece_of_a_word() -> None:
    import re

    # Word edges as the lexical side cuts words: underscores, digits, accents, a matching word inside a longer
    # one, at the start and end of the text, repeated, and in another case.
    texts = ["keys_key key2 Keys, keyboard key", "KEY-keys.key", "monkey keyé key", "", "no match here"]
    terms = QueryTerms("keys")
    reference = [
        [(m.start(), m.end()) for m in re.finditer(r"[^\W_]+", t) if stems([m.group()])[0] & terms.stems]
        for t in texts
    ]
    found = terms.find_many(texts)
    assert [[(o.start, o.end) for o in f] for f in found] == reference
    assert reference[0] == [(0, 4), (5, 8), (14, 18), (29, 32)]  # the comparison is not empty
    assert all(o.stems == frozenset({"kei"}) for f in found for o in f)


def test_stems_are_the_same_from_the_cache() -> None:
    from searchapp import analysis

    words = ["Rotating", "signing", "Rotating", "café"]
    first = stems(words)
    assert set(words) <= set(analysis._stem_cache)
    assert stems(words) == first == [frozenset({"rotat"}), frozenset({"sign"}), frozenset({"rotat"}),
                                     frozenset({"cafe"})]


def test_word_spans_cut_words_as_the_lexical_side_does() -> None:
    import re
    import sys

    from searchapp.analysis import word_spans

    # word_spans tells a word's edges by str.isalnum: the pattern word_list cuts by must agree on every character.
    letter_or_digit = re.compile(r"[^\W_]")
    assert all(bool(letter_or_digit.match(chr(c))) == chr(c).isalnum() for c in range(sys.maxunicode + 1))
    texts = ["aaaa aa a_aa aa", "Key key, keys KEY key2 keyé ²key key", "", "aa", "naïve naïveté café_café"]
    words = {"aa", "key", "KEY", "keys", "café", "naïve"}
    for text in texts:
        reference = [(m.start(), m.end()) for m in re.finditer(r"[^\W_]+", text) if m.group() in words]
        assert word_spans(text, words) == reference, text
    assert word_spans(texts[0], words) == [(5, 7), (10, 12), (13, 15)]  # not empty; "_" cuts words
