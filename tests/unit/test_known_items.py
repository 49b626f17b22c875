"""The known-item questions file read (spellings of a target path, comments, byte-order mark, CRLF, lines split at
newlines only, NUL refused) and misses."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchapp.errors import SearchappError
from searchapp.evaluate.known_items import KnownItems, Question, misses, read_questions


def test_questions_file_spellings(tmp_path: Path) -> None:
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "docs" / "a.md").write_text("a")
    (tmp_path / "docs" / "sub" / "b.md").write_text("b")
    file = tmp_path / "q.tsv"
    file.write_bytes("\ufeff# comment\r\n  \r\nfirst?\t./a.md | sub//b.md|a.md\r\n  # indented comment\r\n"
                     "second \tsub\\b.md\r\n".encode())
    items = read_questions(file, tmp_path / "docs")
    assert items.name == "docs"
    assert items.questions == (Question(3, "first?", ("a.md", "sub/b.md")), Question(5, "second", ("sub/b.md",)))
    assert items.queries == {"3": "first?", "5": "second"}
    assert items.qrels == {"3": {"a.md": 1, "sub/b.md": 1}, "5": {"sub/b.md": 1}}


def test_misses_name_what_ranked_above() -> None:
    items = KnownItems("docs", (Question(1, "q1", ("a",)), Question(2, "q2", ("b", "c")), Question(3, "q3", ("z",))))
    ranked = {"1": ["a", "b"], "2": ["x", "y", "c", "b"], "3": [f"d{i}" for i in range(12)] + ["z"]}
    got = misses(items, ranked)
    assert [(m.question.line, m.rank, m.above) for m in got] == [
        (2, 3, ("x", "y")),
        (3, None, tuple(f"d{i}" for i in range(10))),  # beyond the top 10: those ten shown
    ]
    assert got[0].to_dict() == {"line": 2, "question": "q2", "targets": ["b", "c"], "rank": 3, "first": "x",
                                "above": ["x", "y"]}


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x0c", "\x0b", "\x1c", "\x85", "\r"])
def test_a_question_holding_a_line_separator_other_than_newline_is_one_line(tmp_path: Path, separator: str) -> None:
    # str.splitlines splits at each of these: the question was cut in two ("expected question<TAB>targets") and
    # the lines after it numbered one too far.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("a")
    file = tmp_path / "q.tsv"
    file.write_bytes(f"first{separator}half?\ta.md\r\nsecond?\ta.md\n".encode())
    items = read_questions(file, tmp_path / "docs")
    assert items.questions == (Question(1, f"first{separator}half?", ("a.md",)), Question(2, "second?", ("a.md",)))


def test_a_nul_in_a_question_is_one_line_naming_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("a")
    file = tmp_path / "q.tsv"
    file.write_bytes(b"# about a\nfine?\ta.md\nnul\x00here?\ta.md\n")
    with pytest.raises(SearchappError) as info:
        read_questions(file, tmp_path / "docs")
    assert str(info.value) == f"{file}:3: a NUL character (a text file holds none)"
