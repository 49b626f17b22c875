"""The known-item questions file read (spellings of a target path, comments, byte-order mark, CRLF) and misses."""

from __future__ import annotations

from pathlib import Path

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
