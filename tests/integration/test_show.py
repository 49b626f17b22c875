"""The command line's places of hits: ``path:line`` in the query table, the four fields in ``--json``, and
``searchapp show`` (a passage in its lines, a whole document; marks, JSON, errors): a file's own lines while it is
the file indexed, the index's text otherwise."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchapp import Index, IndexConfig
from searchapp.cli import app, show_command
from searchapp.ingest.formats.load import load_document
from tests.integration.test_line_numbers import PAGE, WORDS, folder_with_page, stripped_lines, where

runner = CliRunner()


@pytest.fixture()
def location(tmp_path: Path, fake_encoder) -> str:  # type: ignore[no-untyped-def]
    docs = folder_with_page(tmp_path)
    # Control characters in a file are shown as escapes, never obeyed by the terminal.
    (docs / "hostile.txt").write_text("First line.\nThe \x1b[2J\x1b]52;c;ZXZpbA==\x07 hostile line of keys.\nLast.\n")
    with Index(tmp_path / "ix", create=True, config=IndexConfig.from_flat(max_tokens=24), encoder=fake_encoder) as ix:
        ix.ingest(docs)
        ix.add_texts(["A note about signing keys."], ids=["note 1"])
    return str(tmp_path / "ix")


def hits_of(location: str, query: str, path_glob: str = "*keys.md") -> list[dict]:  # type: ignore[type-arg]
    out = runner.invoke(app, ["query", query, "--mode", "lexical", "-k", "50", "-i", location, "--path-glob",
                              path_glob, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)["hits"]  # type: ignore[no-any-return]


def test_the_cli_table_shows_path_line_and_json_has_the_four_fields(location: str) -> None:
    hits = hits_of(location, WORDS)
    for h in hits:
        assert (h["line"], h["column"]) == where(PAGE, h["start"])
        assert (h["end_line"], h["end_column"]) == where(PAGE, h["end"])
    table = runner.invoke(app, ["query", WORDS, "--mode", "lexical", "-k", "50", "-i", location, "--path-glob",
                                "*keys.md"])
    assert table.exit_code == 0, table.output
    heads = [line for line in table.stdout.splitlines() if "docs/keys.md" in line]
    # Each hit at the line of its marked words (as grep -n), beside the passage's own span in --json.
    assert [re.search(r"docs/keys\.md:(\d+)  passage (\d+)", line).groups() for line in heads] == [  # type: ignore[union-attr]
        (str(h["match_line"]), str(h["passage_id"])) for h in hits]
    assert all(h["line"] <= h["match_line"] <= h["end_line"] for h in hits)


def test_show_a_passage_in_its_lines_with_the_query_marked(location: str, monkeypatch: pytest.MonkeyPatch) -> None:
    [hit] = [h for h in hits_of(location, "refused") if "refused" in h["text"]]
    lines = PAGE.split("\n")
    out = runner.invoke(app, ["show", str(hit["passage_id"]), "-i", location])
    assert out.exit_code == 0, out.output
    head, *body = out.stdout.splitlines()
    assert head == f"file  docs/keys.md:{hit['line']}:{hit['column']}  passage {hit['passage_id']}"
    first, last = hit["line"] - 3, hit["end_line"] + 3  # three lines of context by default
    rows = [re.fullmatch(r" *(\d+)([:-]) (.*)", row).groups() for row in body]  # type: ignore[union-attr]
    # As grep -n -C: the passage's lines numbered with ":", the context's with "-".
    assert [(int(n), mark) for n, mark, _ in rows] == [
        (n, ":" if hit["line"] <= n <= hit["end_line"] else "-") for n in range(first, last + 1)]
    for n, _, text in rows:  # the file's own lines, read from disk while it is the file indexed: bullets and all
        assert text == lines[int(n) - 1].expandtabs(8)
    none = runner.invoke(app, ["show", str(hit["passage_id"]), "-C", "0", "-i", location, "--query", "refused keys"])
    assert [row.split(" ", 1)[0] for row in none.stdout.splitlines()[1:]] == [
        f"{n}:" for n in range(hit["line"], hit["end_line"] + 1)]
    assert "\x1b" not in none.stdout  # piped: the text as it is, no marks

    monkeypatch.setattr(show_command, "color_stdout", lambda: True)
    tty = runner.invoke(app, ["show", str(hit["passage_id"]), "-C", "0", "-i", location, "--query", "refused keys"],
                        color=True)
    assert "\x1b[1;33mrefused\x1b[0m" in tty.stdout and "\x1b[1;33mkeys\x1b[0m" in tty.stdout

    as_json = json.loads(runner.invoke(app, ["show", str(hit["passage_id"]), "-C", "1", "-i", location, "--query",
                                             "refused", "--json"]).stdout)
    assert as_json["passage"] == {k: hit[k] for k in ("passage_id", "start", "end", "line", "column", "end_line",
                                                      "end_column", "page", "source_lines")}
    assert (as_json["line"], as_json["end_line"]) == (hit["line"] - 1, hit["end_line"] + 1)
    assert as_json["text"] == PAGE[as_json["start"] : as_json["end"]] and as_json["read_from"] == "file"
    assert [PAGE[s:e] for s, e in as_json["highlights"]] == ["refused"]
    assert (as_json["path"], as_json["source"]) == (hit["path"], "file")


def test_show_a_whole_document_by_path_or_text_id(location: str, tmp_path: Path) -> None:
    whole = runner.invoke(app, ["show", "docs/keys.md", "-i", location])  # relative to the working folder
    assert whole.exit_code == 0, whole.output
    assert stripped_lines(whole.stdout) == stripped_lines(PAGE.expandtabs(8))  # the file's own lines, from disk
    assert whole.stdout.splitlines()[5] == "# Signing keys"  # line 6 of the file: the heading, its mark and all
    assert "\n    Indented    code about" in whole.stdout  # the tab to the next tab stop (8)
    again = runner.invoke(app, ["show", str(tmp_path / "docs" / "keys.md"), "-i", location, "--json",
                                "--query", "keys"])
    shown = json.loads(again.stdout)
    assert (shown["start"], shown["end"], shown["line"], shown["end_line"]) == (0, len(PAGE), 1, PAGE.count("\n") + 1)
    assert shown["passage"] is None and shown["text"].count("\n") == PAGE.count("\n")
    # Every "key" and "keys" of the text shown, the file's own (its front matter's "Keys" too).
    assert shown["text"] == PAGE and shown["read_from"] == "file"
    assert shown["highlights"] == [[m.start(), m.end()] for m in re.finditer(r"(?i)\bkeys?\b", PAGE)]
    note = runner.invoke(app, ["show", "note 1", "-i", location])
    assert note.exit_code == 0 and note.stdout == "A note about signing keys.\n"

    # Changed since it was indexed: the indexed text, markup blanked, and a line saying so.
    (tmp_path / "docs" / "keys.md").write_text(PAGE + "More.\n", encoding="utf-8")
    stale = runner.invoke(app, ["show", "docs/keys.md", "-i", location])
    assert stale.stdout.splitlines()[5] == "  Signing keys" and "as indexed: the file has changed" in stale.stderr
    loaded = load_document(tmp_path / "docs" / "keys.md").text
    assert stripped_lines(stale.stdout) == stripped_lines(loaded[: len(PAGE)].expandtabs(8))
    hostile = runner.invoke(app, ["show", "docs/hostile.txt", "-i", location])
    assert hostile.exit_code == 0 and "\x1b" not in hostile.stdout and "\x07" not in hostile.stdout
    assert "The \\x1b[2J\\x1b]52;c;ZXZpbA==\\x07 hostile line of keys." in hostile.stdout.splitlines()


def test_show_refuses_what_the_index_does_not_hold_in_one_line(location: str) -> None:
    for target, message in [("999999", "no passage with id 999999"),
                             ("docs/missing.md", "'docs/missing.md' is not in the index"),
                             ("0", "passage_id must be a whole number")]:
        out = runner.invoke(app, ["show", target, "-i", location])
        assert out.exit_code == 2, (target, out.output)
        assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: ") and message in out.stderr, out.stderr
        assert "Traceback" not in out.output
    gone = runner.invoke(app, ["show", "1", "-i", str(Path(location).parent / "nope")])
    assert gone.exit_code == 2 and gone.stderr.startswith("error: ") and gone.stderr.count("\n") == 1


@pytest.mark.parametrize("digits", [20, 5000])
def test_a_passage_id_of_too_many_digits_is_one_line(location: str, digits: int) -> None:
    # 5,000 digits made Python's int() refuse the string (a ValueError past 4,300 digits): a traceback.
    res = runner.invoke(app, ["show", "9" * digits, "-i", location])
    assert res.exit_code == 2, res.output
    assert f"has {digits:,} digits" in res.stderr and "Traceback" not in res.output
    assert len(res.stderr.splitlines()) == 1


def test_an_unindexed_file_never_shows_a_text_whose_id_is_its_path(location: str, tmp_path: Path,
                                                                   fake_encoder) -> None:  # type: ignore[no-untyped-def]
    # A text's id may read as a relative path; a file of that path that is not indexed printed the text, unlabelled.
    with Index(location, encoder=fake_encoder) as ix:
        ix.add_texts(["What the text says."], ids=["docs/unindexed.md"])
    (tmp_path / "docs" / "unindexed.md").write_text("What the file says.\n", encoding="utf-8")
    out = runner.invoke(app, ["show", "docs/unindexed.md", "-i", location])
    assert out.exit_code == 2, out.output
    assert "What the text says." not in out.stdout
    assert out.stderr.count("\n") == 1 and "is a file that is not in the index" in out.stderr
    text = runner.invoke(app, ["show", "--text", "docs/unindexed.md", "-i", location, "--json"])
    assert text.exit_code == 0, text.output
    assert (json.loads(text.stdout)["source"], json.loads(text.stdout)["text"]) == ("text", "What the text says.")


def test_show_and_path_prefix_reach_a_file_through_a_linked_parent_folder(location: str, tmp_path: Path) -> None:
    # The index keys files by their folders' real paths; a path through a link to a parent folder said "not in
    # the index" (show) and matched nothing (--path-prefix).
    (tmp_path / "linked").symlink_to(tmp_path / "docs", target_is_directory=True)
    whole = runner.invoke(app, ["show", "linked/keys.md", "-i", location, "--json"])
    assert whole.exit_code == 0, whole.output
    assert json.loads(whole.stdout)["path"] == str((tmp_path / "docs" / "keys.md").resolve())
    for prefix in ["linked", "linked/keys.md"]:
        out = runner.invoke(app, ["query", WORDS, "--mode", "lexical", "-i", location, "--path-prefix", prefix,
                                  "--json"])
        assert out.exit_code == 0, out.output
        hits = json.loads(out.stdout)["hits"]
        assert hits and {h["path"] for h in hits} <= {str((tmp_path / "docs" / n).resolve()) for n in
                                                      ("keys.md", "hostile.txt")}, prefix


def test_a_hit_s_line_is_where_the_query_s_words_are(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    # The table gave the passage's first line (config.rst:170 for a word on line 187).
    docs = tmp_path / "notes"
    docs.mkdir()
    lines = ["# Settings", "", "Cookies are signed.", "", "The secure flag:", "SESSION_COOKIE_SECURE sends it over "
             "HTTPS only.", "", "More text."]
    (docs / "config.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with Index(tmp_path / "ix2", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.ingest(docs)
    out = runner.invoke(app, ["query", "SESSION_COOKIE_SECURE", "--mode", "lexical", "-i", str(tmp_path / "ix2"),
                              "--json"])
    [hit] = json.loads(out.stdout)["hits"]
    assert hit["line"] < 6 and hit["match_line"] == 6  # the passage's span stays; the match's line is beside it
    table = runner.invoke(app, ["query", "SESSION_COOKIE_SECURE", "--mode", "lexical", "-i", str(tmp_path / "ix2")])
    assert "notes/config.md:6  passage" in table.stdout, table.stdout
