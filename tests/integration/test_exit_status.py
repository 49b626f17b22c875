"""Exit statuses as grep's and ripgrep's (issue 54, point 10; docs/cli.md, "Exit status"): 0 when the command did
its work and a query found something, 1 when nothing matched (a query without a hit, a `remove` naming nothing
indexed), 2 for an error. Every error was 1 before, as was a `remove` of nothing; a query without a hit was 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from searchapp.cli import app
from searchapp.cli.common import EXIT_ERROR, EXIT_NO_MATCH, EXIT_OK, run

runner = CliRunner()
LEXICAL = ["--mode", "lexical"]  # no model loaded


@pytest.fixture()
def indexed(tmp_path: Path, fake_model, monkeypatch: pytest.MonkeyPatch) -> Path:  # type: ignore[no-untyped-def]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "keys.md").write_text("# Keys\n\nRotate the signing keys.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["ingest", "docs"]).exit_code == 0
    return tmp_path


def test_the_statuses_are_grep_s_and_a_usage_error_is_an_error() -> None:
    assert (EXIT_OK, EXIT_NO_MATCH, EXIT_ERROR) == (0, 1, 2)
    assert runner.invoke(app, ["query", "--no-such-option"]).exit_code == EXIT_ERROR  # a usage error: an error


def test_a_bug_exits_as_an_error_with_its_traceback_and_an_interrupt_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # An exception no error type names exited 1 (Python's status for an uncaught one): "nothing matched".
    tool = typer.Typer()

    @tool.command()
    def broken() -> None:
        raise RuntimeError("a bug")

    @tool.command()
    def stopped() -> None:
        raise KeyboardInterrupt

    for command, status in (("broken", EXIT_ERROR), ("stopped", 130)):
        with pytest.raises(SystemExit) as ended:
            run(lambda command=command: tool([command], prog_name="searchapp"))
        assert ended.value.code == status, command
    assert "RuntimeError: a bug" in capsys.readouterr().err


def test_a_query_with_hits_exits_0_and_one_without_exits_1_its_output_unchanged(indexed: Path) -> None:
    found = runner.invoke(app, ["query", "signing", *LEXICAL])
    assert found.exit_code == 0 and "keys.md" in found.stdout, found.output
    none = runner.invoke(app, ["query", "tomatoes", *LEXICAL])
    assert none.exit_code == 1, none.output
    assert none.stdout == "no results\n" and none.stderr == ""
    as_json = runner.invoke(app, ["query", "tomatoes", *LEXICAL, "--json"])
    assert as_json.exit_code == 1 and json.loads(as_json.stdout) == {"query": "tomatoes", "mode": "lexical", "hits": []}
    # A filter that leaves nothing is no hit too, not an error.
    filtered = runner.invoke(app, ["query", "signing", *LEXICAL, "--filter", "team=x", "--json"])
    assert filtered.exit_code == 1 and json.loads(filtered.stdout)["hits"] == []


def test_a_query_file_exits_0_when_any_of_its_queries_found_a_hit(indexed: Path) -> None:
    (indexed / "some.txt").write_text("tomatoes\nsigning keys\n", encoding="utf-8")
    (indexed / "none.txt").write_text("tomatoes\ncucumbers\n", encoding="utf-8")
    some = runner.invoke(app, ["query", "--file", "some.txt", *LEXICAL, "--json"])
    assert some.exit_code == 0, some.output
    assert [len(json.loads(line)["hits"]) > 0 for line in some.stdout.splitlines()] == [False, True]
    none = runner.invoke(app, ["query", "--file", "none.txt", *LEXICAL])
    assert none.exit_code == 1 and none.stdout == "# tomatoes\nno results\n# cucumbers\nno results\n", none.output


def test_an_error_exits_2(indexed: Path) -> None:
    for args in (["query", "keys", *LEXICAL, "-i", "nowhere"],  # no index there
                 ["query", "keys", *LEXICAL, "--collection", "gudes"],  # a collection the index does not hold
                 ["query", "keys", *LEXICAL, "--group-by", "folder"],  # a bad value the library refuses
                 ["query", "keys", "--mode", "fuzzy"],  # a usage error (Click's)
                 ["status", "-i", "nowhere"], ["remove", "docs/keys.md", "-i", "nowhere"]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
        assert res.stderr.startswith("error: ") and res.stderr.count("\n") == 1, (args, res.stderr)


def test_a_remove_of_nothing_indexed_exits_1_and_an_error_2(indexed: Path) -> None:
    missing = runner.invoke(app, ["remove", "docs/gone.md"])
    assert missing.exit_code == 1 and missing.stdout == "removed 0\n", missing.output
    assert runner.invoke(app, ["remove", "docs/keys.md", "-i", "nowhere"]).exit_code == 2
    assert runner.invoke(app, ["remove", "docs/keys.md"]).exit_code == 0


def test_an_ingest_where_every_file_failed_exits_2_and_one_where_some_failed_0(tmp_path: Path,
                                                                               fake_model) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.txt").write_bytes(b"\x00\x01 binary" * 100)
    every = runner.invoke(app, ["ingest", str(tmp_path / "bad"), "-i", str(tmp_path / "ix1")])
    assert every.exit_code == 2 and "no file could be ingested" in every.stderr, every.output
    (tmp_path / "bad" / "b.txt").write_text("some text", encoding="utf-8")
    some = runner.invoke(app, ["ingest", str(tmp_path / "bad"), "-i", str(tmp_path / "ix2")])
    assert some.exit_code == 0 and "a.txt" in some.stderr, some.output
