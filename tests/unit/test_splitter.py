import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from searchapp.encode.tokenizer import ModelOffsets, load_tokenizer, token_offsets
from searchapp.errors import ConfigError
from searchapp.ingest.splitter import SPLITS_AT_WHITESPACE, SplitterConfig, sentences, split


def words(texts: list[str]) -> list[list[tuple[int, int]]]:
    """A whitespace tokenizer: one token per word, so budgets are easy to count by hand."""
    return [[m.span() for m in re.finditer(r"\S+", t)] for t in texts]


def real(texts: list[str]) -> list[list[tuple[int, int]]]:
    return token_offsets(load_tokenizer("all-MiniLM-L6-v2"), texts)


def check_invariants(text: str, spans, config: SplitterConfig, offsets_fn) -> None:  # type: ignore[no-untyped-def]
    covered = [False] * len(text)
    for span in spans:
        passage = text[span.start : span.end]
        assert passage == passage.strip() and passage
        assert len(offsets_fn([passage])[0]) <= config.budget
        assert span.end - span.start <= config.max_chars
        for i in range(span.start, span.end):
            covered[i] = True
    missing = [c for c, ok in zip(text, covered, strict=True) if not ok and not c.isspace()]
    assert missing == []
    starts = [s.start for s in spans]
    assert starts == sorted(starts)


def test_sentences_are_trimmed_spans() -> None:
    text = "  One two. Three?\n\nFour five!  Six"
    spans = list(sentences(text))
    assert [text[s:e] for s, e in spans] == ["One two.", "Three?", "Four five!", "Six"]


def test_closing_quotes_and_brackets_stay_with_their_sentence() -> None:
    text = 'He said "Go." Then (see this.) And more.'
    assert [text[s:e] for s, e in sentences(text)] == ['He said "Go."', "Then (see this.)", "And more."]
    cfg = SplitterConfig(max_tokens=3 + 2)
    spans = split(text, words, cfg)
    # Each passage ends where its sentence does: no closing quote or bracket falls between two passages.
    assert [text[s.start : s.end] for s in spans] == ['He said "Go."', "Then (see this.)", "And more."]
    check_invariants(text, spans, cfg, words)


def test_packs_whole_sentences_up_to_budget() -> None:
    text = "a b c. d e f. g h i. j k l."
    cfg = SplitterConfig(max_tokens=6 + 2)
    spans = split(text, words, cfg)
    assert [text[s.start : s.end] for s in spans] == ["a b c. d e f.", "g h i. j k l."]
    assert [s.n_tokens for s in spans] == [6, 6]


def test_long_sentence_falls_back_to_token_windows() -> None:
    text = " ".join(f"w{i}" for i in range(25)) + "."
    cfg = SplitterConfig(max_tokens=10 + 2)
    spans = split(text, words, cfg)
    assert [s.n_tokens for s in spans] == [10, 10, 5]
    check_invariants(text, spans, cfg, words)


def test_overlap_repeats_trailing_sentences() -> None:
    text = "a b. c d. e f. g h."
    cfg = SplitterConfig(max_tokens=4 + 2, overlap=2)
    passages = [text[s.start : s.end] for s in split(text, words, cfg)]
    assert passages == ["a b. c d.", "c d. e f.", "e f. g h."]


def test_run_without_spaces_is_cut_by_characters() -> None:
    text = "x" * 10_000
    cfg = SplitterConfig(max_tokens=64, max_chars=1000)
    spans = split(text, real, cfg)
    assert len(spans) == 10
    check_invariants(text, spans, cfg, real)


def test_real_tokenizer_budget_and_offsets_on_prose() -> None:
    sentence = "Passages are packed from sentences, measured in word pieces by the model's tokenizer. "
    text = "# Title\n\n" + sentence * 60 + "\n\nA last line without a full stop"
    cfg = SplitterConfig(max_tokens=64)
    spans = split(text, real, cfg)
    assert len(spans) > 5
    check_invariants(text, spans, cfg, real)


def test_bad_config_is_rejected() -> None:
    with pytest.raises(ConfigError):
        SplitterConfig(max_tokens=2)
    with pytest.raises(ConfigError):
        SplitterConfig(max_tokens=10, overlap=8)


def test_empty_and_blank_text_give_no_passages() -> None:
    assert split("", words) == []
    assert split(" \n\t ", words) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(min_size=0, max_size=600), st.integers(min_value=6, max_value=40), st.integers(0, 3))
def test_property_offsets_exact_no_gaps_no_overlong(text: str, max_tokens: int, overlap: int) -> None:
    cfg = SplitterConfig(max_tokens=max_tokens, overlap=overlap, max_chars=120)
    spans = split(text, real, cfg)
    check_invariants(text, spans, cfg, real)


def test_a_half_full_passage_ends_at_a_paragraph_or_heading() -> None:
    para_a = "a b c d e f."  # 6 tokens
    para_b = "g h i."  # 3 tokens
    cfg = SplitterConfig(max_tokens=10 + 2)
    text = f"{para_a}\n\n{para_b}"
    assert [text[s.start : s.end] for s in split(text, words, cfg)] == [para_a, para_b]
    text = f"{para_a}\n# Heading\n{para_b}"
    assert [text[s.start : s.end] for s in split(text, words, cfg)] == [para_a, f"# Heading\n{para_b}"]
    # Below half the budget a paragraph break does not end the passage, and a single newline never does.
    short = "a b.\n\nc d."
    assert [short[s.start : s.end] for s in split(short, words, cfg)] == [short]
    text = f"{para_a}\n{para_b}"
    assert [text[s.start : s.end] for s in split(text, words, cfg)] == [text]


def test_a_long_line_reaches_the_tokenizer_in_bounded_pieces() -> None:
    # The tokenizer keeps tens of bytes per character it is given: a megabyte line must not reach it at once.
    given: list[int] = []

    def recording(texts: list[str]) -> list[list[tuple[int, int]]]:
        given.append(sum(map(len, texts)))
        return words(texts)

    text = "word " * 100_000 + "z" * 300_000 + " tail"  # one sentence of 800,005 characters
    cfg = SplitterConfig()
    spans = split(text, recording, cfg)
    check_invariants(text, spans, cfg, words)
    assert max(given) <= 400_000


def test_a_run_without_spaces_is_cut_at_the_same_places_however_long() -> None:
    text = "x" * 200_000
    spans = split(text, real, SplitterConfig())
    assert [(s.start, s.end) for s in spans] == [(i, i + 4000) for i in range(0, 200_000, 4000)]


# Text a tokenizer can trip on at the joins: words of several word pieces (a window cut inside one tokenizes
# otherwise on its own), control characters BERT's normaliser deletes (\x0b, \x85, \x1c), other whitespace, CJK
# (split out character by character), combining marks, punctuation that ends sentences, closing quotes.
HOSTILE = st.lists(st.sampled_from(
    ["abxy", "tokenization", "immunohistochemistry", "a", "b", ".", "!", "?", ")", '"', "#", " ", " ", "\n", "\t",
     "\r", "\x0b", "\x0c", "\x85", "\x1c", "\u00a0", "\u3000", "\u4e2d", "\u0301"]), max_size=200).map("".join)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(HOSTILE, st.integers(min_value=6, max_value=40), st.integers(0, 3))
def test_property_counts_are_exact_when_the_tokenizer_adds_up(text: str, max_tokens: int, overlap: int) -> None:
    # The model's offsets say their counts add up over whitespace, so passages are not tokenized again: each
    # passage's count must still be what its own text tokenizes to.
    offsets = ModelOffsets("all-MiniLM-L6-v2")
    assert getattr(offsets, SPLITS_AT_WHITESPACE) is True
    cfg = SplitterConfig(max_tokens=max_tokens, overlap=overlap, max_chars=120)
    spans = split(text, offsets, cfg)
    check_invariants(text, spans, cfg, real)
    assert [s.n_tokens for s in spans] == [len(o) for o in real([text[s.start : s.end] for s in spans])]


def test_a_tokenizer_that_adds_up_tokenizes_prose_once() -> None:
    given: list[str] = []

    def recording(texts: list[str]) -> list[list[tuple[int, int]]]:
        given.extend(texts)
        return ModelOffsets("all-MiniLM-L6-v2")(texts)

    text = "# Title\n\n" + "Passages are packed from sentences, measured in word pieces. " * 40
    cfg = SplitterConfig(max_tokens=64)
    sentence_texts = [text[s:e] for s, e in sentences(text)]
    split(text, recording, cfg)
    assert given[: len(sentence_texts)] == sentence_texts
    assert len(given) > len(sentence_texts)  # not told it adds up: every passage is tokenized again
    given.clear()
    recording.splits_at_whitespace = True  # type: ignore[attr-defined]
    spans = split(text, recording, cfg)
    assert given == sentence_texts
    check_invariants(text, spans, cfg, real)


def test_only_whitespace_splitting_tokenizers_say_they_add_up() -> None:
    assert ModelOffsets("all-MiniLM-L6-v2").splits_at_whitespace is True
    assert not getattr(words, SPLITS_AT_WHITESPACE, False)


def test_counts_are_summed_only_across_ascii_whitespace() -> None:
    # A tokenizer that splits at ASCII whitespace alone adds up over it, but not over \x0b (a sentence boundary to
    # the splitter): the passage joined there is tokenized again.
    def ascii_words(texts: list[str]) -> list[list[tuple[int, int]]]:
        return [[m.span() for m in re.finditer(r"[^ \t\n\r]+", t)] for t in texts]

    ascii_words.splits_at_whitespace = True  # type: ignore[attr-defined]
    text = "a.\x0bb. c."
    spans = split(text, ascii_words, SplitterConfig(max_tokens=10))
    assert [(text[s.start : s.end], s.n_tokens) for s in spans] == [(text, 2)]
