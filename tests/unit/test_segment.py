"""How runs of scripts written without spaces reach the lexical tokenizer (searchapp/segment.py): cut into
two-letter units, in linear time; every other text reaches it as it is, so English terms cannot move."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from searchapp.analysis import TOKENIZER, fts5_terms, query_terms, stems
from searchapp.segment import for_tokenizer, segmented, units
from searchapp.sqlite_driver import dbapi
from tests.unit.test_markup_linear import cpu_seconds, needs_cpu_timer

ENGLISH = ("Alpha-synuclein in COVID-19, 2.5 mg; the café's naïve résumé (Keys, keys) \u2014 e-mail C++ "
           "snake_case \ue000 \U0001f600 \u00bd")


def raw_terms(text: str) -> str:
    """The terms the tokenizer makes of ``text`` given as it is: what the index held before any cutting."""
    conn = dbapi().connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE raw USING fts5(x, content='', tokenize='{TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(raw, 'instance')")
    conn.execute("INSERT INTO raw(rowid, x) VALUES (1, ?)", (text,))
    return " ".join(r[0] for r in conn.execute("SELECT term FROM v ORDER BY offset"))


def test_english_reaches_the_tokenizer_unchanged() -> None:
    assert for_tokenizer(ENGLISH) is ENGLISH and not segmented(ENGLISH)
    assert fts5_terms([ENGLISH]) == [raw_terms(ENGLISH)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.characters(exclude_categories=("Cs",), max_codepoint=0x2FFF)))
def test_text_without_those_scripts_keeps_its_terms(text: str) -> None:
    # Below U+3000 only Thai (U+0E00 to U+0E7F) is cut.
    if any("\u0e00" <= ch <= "\u0e7f" for ch in text):
        return
    assert for_tokenizer(text) is text
    assert fts5_terms([text]) == [raw_terms(text)]


def test_chinese_and_japanese_are_cut_into_overlapping_pairs() -> None:
    assert units("東京大学") == ["東京", "京大", "大学"]
    assert units("図") == ["図"]
    # A run's punctuation (the katakana middle dot) ends a stretch; the pairs never straddle it.
    assert units("ジョン・スミス") == ["ジョ", "ョン", "スミ", "ミス"]
    assert for_tokenizer("English混合text") == "English 混合 text"
    assert fts5_terms(["搜索引擎 Search"]) == ["搜索 索引 引擎 search"]
    assert query_terms("北京大学") == ["北京", "京大", "大学"]


def test_thai_is_cut_by_clusters_and_keeps_its_marks() -> None:
    rice, white = units("ข้าว"), units("ขาว")
    # The tone mark stays with its letter (as a private-use character, inside the token): different units.
    assert len(rice) == 2 and rice != white and rice[1] == white[1] == "าว"
    assert fts5_terms(["ข้าว"]) == [" ".join(rice)]
    # A unit analysed again (a query's, by stems) is itself: the cut is idempotent.
    assert for_tokenizer(" ".join(rice)).split() == rice
    assert [set(s) for s in stems(rice)] == [{u} for u in rice]
    # Thai next to Chinese: no pair straddles the two scripts.
    assert units("ภาษา中文") == ["ภา", "าษ", "ษา", "中文"]


# Seconds of CPU time per kilobyte the cut may take on hostile input: about ten times what it takes (a character
# class repeated, then one pass per run).
CPU_PER_KB = 0.01
HOSTILE = ["東" * 200_000, "ก\u0e49" * 100_000, "\u0e49" * 200_000, "ก\ue049" * 100_000, "東ก" * 100_000,
           "a東" * 100_000, "\ue049" * 200_000, "東・" * 100_000]


@needs_cpu_timer
@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_the_cut_is_linear_in_the_text(text: str) -> None:
    limit = CPU_PER_KB * len(text) / 1000
    started = time.process_time()
    with cpu_seconds(limit):
        query_terms(text)
        cut = for_tokenizer(text)
    assert len(cut) <= 4 * len(text) and time.process_time() - started <= limit


@needs_cpu_timer
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["東", "ก", "\u0e49", "\ue049", "・", " ", "a", "ー", "\u3099"]),
                min_size=1, max_size=40))
def test_any_mix_is_cut_within_the_bound(pieces: list[str]) -> None:
    text = "".join(pieces) * (20_000 // len(pieces) + 1)
    with cpu_seconds(CPU_PER_KB * len(text) / 1000):
        for_tokenizer(text)
