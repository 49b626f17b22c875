"""``--help`` reads at 80 columns, and a usage error is one line (issue: the first ten minutes; cli/help.py).

Each command's help is rendered through the runner at 80 columns, as a terminal of that width shows it."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from searchapp.cli import app, commands

runner = CliRunner()
COMMANDS = sorted(commands())


def _help(*command: str) -> str:
    out = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "80", "TERM": "dumb"})
    assert out.exit_code == 0, out.output
    return out.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_no_type_noise_or_machine_ranges(command: str) -> None:
    # Typer 0.29 wrote <bool> beside every flag and [x<=9223372036854775807] beside every whole number.
    text = _help(command)
    assert "<bool>" not in text and "<str>" not in text and "<int" not in text and "<float" not in text
    assert "9223372036854775807" not in text and "2147483647" not in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_query_help_keeps_the_ranking_knobs_apart_and_shows_examples() -> None:
    text = _help("query")
    panel = text.index("Advanced ranking")
    # The fusion settings are in their own panel, after the options a search asks.
    for knob in ("--fusion", "--alpha-question", "--document-weight", "--k0"):
        assert text.index(knob) > panel, knob
    for everyday in ("--mode", "--collection", "--path-prefix", "--json"):
        assert text.index(everyday) < panel, everyday
    assert re.search(r"^\s*-k\b|\s-k\s", text, re.MULTILINE)
    assert "Examples:" in text and "searchapp query how do I rotate the signing keys" in text
    assert "Examples:" in _help("ingest") and "Examples:" in _help("show")


def test_a_query_s_words_need_no_quotes(tmp_path, fake_model) -> None:  # type: ignore[no-untyped-def]
    # `searchapp query register a blueprint` was refused: a query took one argument.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "bp.md").write_text("# Blueprints\n\nRegister a blueprint on the app.\n", encoding="utf-8")
    ix = str(tmp_path / "ix")
    assert runner.invoke(app, ["ingest", str(tmp_path / "docs"), "-i", ix]).exit_code == 0
    unquoted = runner.invoke(app, ["query", "register", "a", "blueprint", "-i", ix, "--mode", "lexical", "--json"])
    quoted = runner.invoke(app, ["query", "register a blueprint", "-i", ix, "--mode", "lexical", "--json"])
    assert unquoted.exit_code == 0, unquoted.output
    assert unquoted.stdout == quoted.stdout and '"query": "register a blueprint"' in unquoted.stdout


@pytest.mark.parametrize("args, message", [
    (["query", "keys", "-k", "0"], "error: Invalid value for '--k' / '-k'"),
    (["query", "keys", "--colour"], "error: No such option: --colour"),
])
def test_a_usage_error_is_one_line_naming_the_help(args: list[str], message: str) -> None:
    # It was a boxed panel, a second style beside the library's one-line errors.
    out = runner.invoke(app, args)
    assert out.exit_code == 2
    assert out.stderr.startswith(message) and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.rstrip().endswith(" query --help)")
    assert "│" not in out.stderr and "╭" not in out.stderr


def test_a_choice_with_one_name_is_said_plainly(tmp_path, fake_model) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("Signing keys.\n", encoding="utf-8")
    assert runner.invoke(app, ["ingest", str(tmp_path / "docs"), "-i", str(tmp_path / "ix")]).exit_code == 0
    out = runner.invoke(app, ["query", "keys", "--group-by", "doc", "-i", str(tmp_path / "ix")])
    assert out.exit_code == 2 and "unknown group_by 'doc': use document" in out.stderr, out.output
