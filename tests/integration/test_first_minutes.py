"""What a new user meets in the first minutes, beyond help and progress (issue: the first ten minutes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchapp.cli import app

runner = CliRunner()


def test_a_command_in_a_subfolder_finds_the_index_above(tmp_path: Path, fake_model,  # type: ignore[no-untyped-def]
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # From a subfolder, "no index at .searchapp" advised an ingest that made a second index.
    docs = tmp_path / "docs" / "guide"
    docs.mkdir(parents=True)
    (docs / "keys.md").write_text("# Keys\n\nRotate the signing keys.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["ingest", "docs"]).exit_code == 0
    monkeypatch.chdir(docs)
    out = runner.invoke(app, ["query", "signing", "keys", "--mode", "lexical", "--json"])
    assert out.exit_code == 0, out.output
    assert [Path(h["path"]).name for h in json.loads(out.stdout)["hits"]] == ["keys.md"]
    status = json.loads(runner.invoke(app, ["status", "--json"]).stdout)
    assert status["path"] == str(tmp_path / ".searchapp") and not (docs / ".searchapp").exists()
    # An index named on the command line is that one, found or not.
    assert runner.invoke(app, ["status", "-i", ".searchapp"]).exit_code == 2


def test_removing_what_the_index_does_not_hold_is_an_error(tmp_path: Path, fake_model,  # type: ignore[no-untyped-def]
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # `remove` of a path not indexed said "removed 0" and exited 0, as if it had done what was asked.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["ingest", "docs"]).exit_code == 0
    missing = runner.invoke(app, ["remove", "docs/b.md", "--json"])
    assert missing.exit_code == 1 and json.loads(missing.stdout)["removed"] == 0
    assert missing.stderr.startswith("nothing in the index is named 'docs/b.md'")  # no match, not an error
    done = runner.invoke(app, ["remove", "docs/a.md"])
    assert done.exit_code == 0 and "removed 1" in done.stdout
