"""Lines and columns of a text (searchapp/lines.py): one rule for ``\\n``, ``\\r\\n`` and ``\\r``, checked against a
plain count over every prefix, and the cuts of a passage's context to whole lines."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from searchapp.lines import (
    Place,
    Position,
    advance,
    breaks,
    end_of,
    head,
    load_source_lines,
    places,
    positions,
    source_line,
    spot,
    tail,
)


def naive(text: str, offset: int) -> Position:
    """The position of ``offset`` by splitting the prefix into lines as editors do (\\r\\n one break)."""
    lines = text[:offset].replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return Position(len(lines), len(lines[-1]) + 1)


def test_each_kind_of_line_break_counts_once() -> None:
    text = "one\ntwo\r\nthree\rfour"
    assert breaks(text) == 3
    starts = [text.index(w) for w in ("one", "two", "three", "four")]
    assert positions(text, starts) == [Position(1, 1), Position(2, 1), Position(3, 1), Position(4, 1)]
    assert positions(text, [text.index("wo"), len(text)]) == [Position(2, 2), Position(4, 5)]
    assert advance(Position(7, 3), "ab") == Position(7, 5)
    assert advance(Position(7, 3), "ab\r\ncd") == Position(8, 3)
    assert end_of(None, None, "text") is None and end_of(2, 4, "x\ny") == Position(3, 2)


# Text made of the characters that matter: letters, spaces and the three breaks (a "\r\n" is never cut: offsets
# are taken at letters, as a passage's start is).
TEXTS = st.lists(st.sampled_from(["a", "b", " ", "\n", "\r", "\r\n", "é"]), max_size=60).map("".join)


@given(TEXTS, st.data())
def test_positions_agree_with_counting_every_prefix(text: str, data: st.DataObject) -> None:
    at_letters = [i for i, ch in enumerate(text) if ch not in "\r\n"] + [len(text)]
    offsets = sorted(data.draw(st.lists(st.sampled_from(at_letters), max_size=6)))
    got = positions(text, offsets)
    assert got == [naive(text, o) for o in offsets]
    for o, p in zip(offsets, got, strict=True):
        rest = text[o:]
        assert advance(p, rest) == naive(text, len(text))


def test_head_and_tail_keep_the_rest_of_a_line_and_n_whole_lines() -> None:
    before = "zero\r\none\ntwo\rthree: the passage starts here"
    assert before[tail(before, 0):] == "three: the passage starts here"
    assert before[tail(before, 2):] == "one\ntwo\rthree: the passage starts here"
    assert before[tail(before, 9):] == before
    after = " and ends here\nnext\r\nnext again\n"
    assert after[: head(after, 0)] == " and ends here"
    assert after[: head(after, 2)] == " and ends here\nnext\r\nnext again"
    assert after[: head(after, 9)] == after


def test_places_give_each_passage_its_part_of_the_source_lines_and_its_page() -> None:
    text = "Alpha beta.\nGamma delta epsilon.\n\nZeta."
    starts, ends = [0, 12, 34], [11, 32, 39]
    # The text's characters from 0 on are on the file's line 3, from 6 on line 4, from 12 on line 9, from 18 on 10...
    pairs = ((0, 3), (6, 4), (12, 9), (18, 10), (34, 20))
    got = places(text, starts, ends, pairs, pages=(0, 30))
    assert got == [Place(1, 1, "0:3,6:4", 1), Place(2, 1, "0:9,6:10", 1), Place(4, 1, "0:20", 2)]
    second = load_source_lines(got[1].source_lines)
    assert second == ((0, 9), (6, 10)) and source_line(second, 5) == 9 and source_line(second, 6) == 10
    # A passage starting between two pairs takes the line in force there.
    assert places(text, [8], [11], pairs)[0].source_lines == "0:4"
    # Hits: the file's first and last lines, no columns; without source lines, the text's line and column.
    assert spot(2, 1, text[12:32], second) == (9, None, 10, None)
    assert spot(2, 1, text[12:32], None) == (2, 1, 2, 21)
    assert places(text, starts, ends) == [Place(1, 1), Place(2, 1), Place(4, 1)]
