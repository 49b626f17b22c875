"""The snippet window: the query's terms as the lexical side analyses them, the best window for them, offsets
into the document."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

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
    "i", "eing" -> "e", an "e" appended after "at", "bl" and "iz"), in both cases, plus digits and accented
    words: every suffix of Porter's steps after one or two letters, the suffixes of its first step after three."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    short = ["", "y", "ies", "ied", "yed", "ying", "ing", "ed", "s", "sses", "ss", "e", "eed", "ly", "er", "ll"]
    long = short + [
        "ational", "tional", "enci", "anci", "izer", "bli", "abli", "alli", "entli", "eli", "ousli", "ization",
        "ation", "ator", "alism", "iveness", "fulness", "ousness", "aliti", "iviti", "biliti", "logi", "icate",
        "ative", "alize", "iciti", "ical", "ful", "ness", "al", "ance", "ence", "ic", "able", "ible", "ant", "ement",
        "ment", "ent", "sion", "tion", "ou", "ism", "ate", "iti", "ous", "ive", "ize", "ating", "bling", "izing",
        "ated", "bled", "ized", "ping", "ped",
    ]
    words = [a + s for a in letters for s in long] + [a + b + s for a in letters for b in letters for s in long]
    words += [a + b + c + s for a in letters for b in letters for c in letters for s in short]
    words += [w.upper() for w in words[::7]] + ["eyed", "Eyed", "ayes", "ies", "eing", "2010s", "b12", "Éclair",
                                               "naïve", "Straße", "ﬁnance"]
    return words


def test_the_word_prefilter_never_drops_a_word_the_tokenizer_would_match() -> None:
    from searchapp.query import snippets

    words = _vocabulary()
    kept = 0
    for word, word_stems in zip(words, stems(words), strict=True):
        for s in word_stems:
            # A query term stemming to s must let this word through.
            assert not word.isascii() or word.lower().startswith(snippets._heads(s)), (word, s)
            kept += len(s) >= 3 and word[2].lower() != s[2]
    assert kept  # the vocabulary holds words whose stem changed their third letter ("day" -> "dai")


def test_find_many_equals_analysing_every_word(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from searchapp.query import snippets

    # Every 13th word of the vocabulary (every suffix after many beginnings; the whole would take 20 s here).
    words = _vocabulary()[::13] + ["eyed", "Eyed", "ayes", "ies", "eing", "2010s", "Éclair", "naïve", "Straße",
                                   "ﬁnance", "keys", "Days", "dayed", "relational", "ratings"]
    texts = [" ".join(words[i : i + 300]) for i in range(0, len(words), 300)]
    queries = ["eyed keys", "the ies", "Éclair naïve", "eing ayes 2010s", "abational relational", "ﬁnance Straße",
               "day rating"]
    fast = [QueryTerms(q).find_many(texts) for q in queries]
    monkeypatch.setattr(snippets.QueryTerms, "_candidates", lambda self, text: _places_by_pattern(text, bool))
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


# Letters and digits in and out of ASCII, ASCII and other gaps (no-break space, em dash, an unassigned code
# point, a lone surrogate), and characters that are letters or digits to str.isalnum without being ASCII.
_MIXED = st.text(st.sampled_from(list("aZk9_ -.,'\t\n\x0b\x1c") + ["é", "ß", "²", "ﬁ", "\u00a0", "—", "\u0378",
                                                                   "\ud800", "キ", "Ω"]), max_size=60)


def _places_by_pattern(text: str, keep) -> dict[str, list[int]]:  # type: ignore[no-untyped-def]
    places: dict[str, list[int]] = {}
    for m in re.finditer(r"[^\W_]+", text):
        if keep(m.group()):
            places.setdefault(m.group(), []).append(m.start())
    return places


@given(_MIXED, st.lists(st.sampled_from(["a", "Z", "k9", "ak", "9", "zz", "é", "k", "aZk"]), max_size=3))
@example("aaaa aa a_aa aa naïve naïveté café_café ²key Key keys", ["a", "aa", "k", "na"])
@settings(max_examples=300, deadline=None)
def test_word_places_are_where_the_pattern_finds_the_words_so_chosen(text: str, prefixes: list[str]) -> None:
    from searchapp.analysis import word_places

    heads = tuple(p.lower() for p in prefixes if p.isascii())
    expected = _places_by_pattern(text, lambda w: not w.isascii() or w.lower().startswith(heads))
    assert word_places(text, prefixes) == expected


def test_word_places_cut_words_as_the_lexical_side_does() -> None:
    from searchapp.analysis import word_places

    texts = ["aaaa aa a_aa aa", "Key key, keys KEY key2 keyé ²key key", "", "aa", "naïve naïveté café_café"]
    for text in texts:
        assert word_places(text, ["a", "k", "c", "n"]) == _places_by_pattern(text, lambda w: True), text
    assert word_places(texts[0], ["aa"]) == {"aaaa": [0], "aa": [5, 10, 13]}  # "_" cuts words
    assert word_places(texts[1], ["key"]) == {"Key": [0], "key": [4, 33], "keys": [9], "KEY": [14], "key2": [18],
                                               "keyé": [23], "²key": [28]}


@given(_MIXED, st.sampled_from(["key", "Éclair zeta", "ies eyed", "a b", "ﬁnance", "キー 9", "day rating"]))
@example("Keys key—é", "key")  # an ASCII word met alone and inside a run with a non-ASCII character
@settings(max_examples=300, deadline=None)
def test_the_prefilter_keeps_the_words_of_a_text_that_the_rule_of_heads_keeps(text: str, query: str) -> None:
    terms = QueryTerms(query)
    heads = tuple(terms._heads)
    expected = _places_by_pattern(text, lambda w: not w.isascii() or w.lower().startswith(heads))
    assert terms._candidates(text) == expected


def _best_window_by_every_run(text: str, found: list, width: int) -> tuple[int, int] | None:
    """The best run as best_window defines it, each run counted from scratch: (first, last) of found."""
    best = None
    for i, first in enumerate(found):
        last = i
        while last + 1 < len(found) and found[last + 1].end - first.start <= width:
            last += 1
        run = found[i : last + 1]
        key = (-len(frozenset().union(*(o.stems for o in run))), -len(run), i, last)
        if best is None or key < best:
            best = key
    return None if best is None else (best[2], best[3])


@given(st.lists(st.tuples(st.integers(1, 40), st.integers(0, 30), st.sets(st.sampled_from("abcd"), min_size=1,
                                                                          max_size=2)), max_size=25),
       st.integers(5, 60))
@settings(max_examples=300, deadline=None)
def test_the_best_window_is_the_run_with_most_terms_then_most_matches_then_earliest(words, width) -> None:  # type: ignore[no-untyped-def]
    from searchapp.query.snippets import Occurrence

    found, at = [], 0
    for size, gap, stems_ in words:  # words in order, none overlapping, some wider than the window
        found.append(Occurrence(at + gap, at + gap + size, frozenset(stems_)))
        at += gap + size + 1
    text = "x" * (at + width + 1)
    expected = _best_window_by_every_run(text, found, width)
    start, end = best_window(text, found, width)
    if expected is None:
        assert start == 0
    else:
        lo, hi = found[expected[0]].start, found[expected[1]].end
        want = max(0, min(lo - (width - (hi - lo)) // 2, len(text) - width))
        assert (start, end) == (want, min(len(text), want + width))


HOSTILE = {
    "one word": "a" * 1_000_000,
    "a word a place": "a " * 500_000,
    "one run of mixed letters": "aé" * 500_000,
    "mixed runs": "aé-" * 333_333,
    "non-ASCII gaps": "a—" * 500_000,
    "no letter at all": "—" * 1_000_000,
    "lone surrogates": "a\ud800 " * 333_333,
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_finding_the_query_words_is_linear_in_the_passages(name: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A hit's untrusted text, a megabyte of it, is searched for the query's words within a CPU-time bound (0.02
    s a kilobyte, about ten times what the slowest of these takes): nothing rescans a run for each place found."""
    from searchapp.query import snippets
    from tests.unit.test_markup_linear import cpu_seconds

    texts = [HOSTILE[name], "ab aé"]
    with cpu_seconds(0.02 * len(texts[0]) / 1000):
        found = QueryTerms("aé ab").find_many(texts)
    monkeypatch.setattr(snippets.QueryTerms, "_candidates", lambda self, text: _places_by_pattern(text, bool))
    assert found == QueryTerms("aé ab").find_many(texts)
    assert found[1]  # the query's words are found at all


def test_word_places_with_many_prefixes_cut_every_word_at_a_cost_that_does_not_grow_with_them() -> None:
    """A query of thousands of words (the HTTP edge takes 10,000 characters) gives thousands of beginnings: past
    MAX_PREFIX_SCANS the words are cut once and looked up, not scanned for once per beginning."""
    import itertools

    from searchapp.analysis import MAX_PREFIX_SCANS, word_places
    from tests.unit.test_markup_linear import cpu_seconds

    letters = "abcdefghijklmnopqrstuvwxyz"
    prefixes = ["".join(t) for t in itertools.islice(itertools.product(letters, repeat=3), 2500)]
    assert len(prefixes) > MAX_PREFIX_SCANS
    text = " ".join(f"{p}ing Zé {p.upper()}s" for p in prefixes[::7]) + " abc—xyz"
    expected = _places_by_pattern(text, lambda w: not w.isascii() or w[:3].lower() in set(prefixes))
    assert word_places(text, prefixes) == expected
    assert word_places(text, prefixes + ["a"]) == _places_by_pattern(
        text, lambda w: not w.isascii() or w[:3].lower() in set(prefixes) or w[:1].lower() == "a")
    big = (text + " ") * (1_000_000 // len(text))
    # 0.17 s here; a scan per beginning took 2.1 s, and comparing every beginning with every other most of a second.
    with cpu_seconds(0.001 * len(big) / 1000):
        word_places(big, prefixes)


def test_a_prefix_other_than_letters_and_digits_is_ignored() -> None:
    from searchapp.analysis import word_places

    assert word_places("a b", ["a b"]) == {}
    assert word_places("x  a", [" a", ""]) == {}
    assert word_places("x  a é", ["a", "-"]) == {"a": [3], "é": [5]}
