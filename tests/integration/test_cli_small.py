"""Small command-line behaviours: --version, -h, an explicitly named unsupported file, human-readable sizes."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from searchapp import __version__
from searchapp.cli import app

runner = CliRunner()


def test_version_and_short_help() -> None:
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.stdout == f"searchapp {__version__}\n"
    assert runner.invoke(app, ["-h"]).exit_code == 0 and "ingest" in runner.invoke(app, ["-h"]).stdout
    sub = runner.invoke(app, ["query", "-h"])
    assert sub.exit_code == 0 and "--min-score" in sub.stdout


def test_an_explicitly_named_unsupported_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "notes.xyz").write_text("some notes")
    res = runner.invoke(app, ["ingest", "notes.xyz"])
    assert res.exit_code == 1
    assert res.stderr.startswith("error: notes.xyz: unsupported file type '.xyz' (supported: ")
    assert len(res.stderr.strip().splitlines()) == 1 and "added" not in res.stdout
    assert not (tmp_path / ".searchapp").exists()  # refused before an index was made


def test_status_shows_the_size_for_a_human(tmp_path: Path, small_index) -> None:  # type: ignore[no-untyped-def]
    small_index.close()
    res = runner.invoke(app, ["status", "-i", str(tmp_path / "ix")])
    line = next(x for x in res.stdout.splitlines() if "disk_bytes" in x)
    assert line.strip().endswith("KiB") or line.strip().endswith("MiB")
