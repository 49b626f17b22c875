"""Ignore files through every way in: ``Index.ingest`` and ``IngestOptions``, ``searchapp ingest`` (``--no-ignore``,
the summary's ``ignored`` count, a warning for an ignore file read in part), the watcher (what the ignore files leave
out is not written; a changed ``.gitignore`` has its folder synced under the new rules) and ``searchapp watch``. The
rules themselves: tests/unit/test_ignore.py."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from searchapp import Index, IngestOptions
from searchapp.cli import app
from searchapp.ingest import ignore
from tests.integration.test_watch import Watching, watching
from tests.integration.test_watcher import ix, names, running  # noqa: F401  (ix: the fixture)

runner = CliRunner()


def project(tmp_path: Path) -> Path:
    """A folder as a repository holds one: sources, and build output and dependencies its .gitignore leaves out."""
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    (root / "build" / "html").mkdir(parents=True)
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / ".gitignore").write_text("build/\nnode_modules/\n*.gen.md\n")
    (root / "docs" / "guide.md").write_text("# Guide\n\nRotate the signing keys every month.")
    (root / "docs" / "api.gen.md").write_text("Generated reference of the signing keys.")
    (root / "build" / "html" / "guide.html").write_text("<p>Rotate the signing keys every month.</p>")
    (root / "node_modules" / "pkg" / "README.md").write_text("A package about signing keys.")
    return root


def test_ingest_leaves_out_what_the_ignore_files_do_and_removes_what_they_now_leave_out(
    tmp_path: Path, ix: Index  # noqa: F811
) -> None:
    root = project(tmp_path)
    summary = ix.ingest(root)
    assert names(ix) == {"guide.md"}
    assert summary.skipped["ignored"] == 3 and summary.to_dict()["skipped"]["ignored"] == 3  # type: ignore[index]
    everything = ix.ingest(IngestOptions(root, ignore_rules=False))
    assert names(ix) == {"guide.md", "api.gen.md", "guide.html", "README.md"} and everything.added == 3
    # Ignored is no longer part of the folder: the next ingest with the rules removes it, as git-aware tools see it.
    again = ix.ingest(root)
    assert names(ix) == {"guide.md"} and again.removed == 3
    (root / "docs" / ".gitignore").write_text("guide.md\n")
    assert ix.ingest(root).removed == 1 and names(ix) == set()


def test_the_cli_counts_what_it_ignored_and_no_ignore_indexes_it(tmp_path: Path, fake_model: Any) -> None:
    root = project(tmp_path)
    index = str(tmp_path / "cli-ix")
    human = runner.invoke(app, ["ingest", str(root), "-i", index])
    assert human.exit_code == 0, human.output
    assert "added 1," in human.stdout and "skipped 1 hidden, 3 ignored" in human.stdout
    every = runner.invoke(app, ["ingest", str(root), "-i", index, "--no-ignore", "--json"])
    assert every.exit_code == 0, every.output
    summary = json.loads(every.stdout)
    assert (summary["added"], summary["skipped"]["ignored"]) == (3, 0)
    back = json.loads(runner.invoke(app, ["ingest", str(root), "-i", index, "--json"]).stdout)
    assert (back["removed"], back["skipped"]["ignored"]) == (3, 3)


def test_an_ignore_file_over_the_bound_is_one_warning_line_and_the_ingest_goes_on(tmp_path: Path,
                                                                                  fake_model: Any) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("A page about keys.")
    (root / "skip.md").write_text("A page the first line of the ignore file leaves out.")
    (root / ".gitignore").write_text("skip.md\n" + "*.nothing\n" * (ignore.MAX_FILE_BYTES // 10 + 1))
    out = runner.invoke(app, ["ingest", str(root), "-i", str(tmp_path / "ix"), "--json"])
    assert out.exit_code == 0, out.output
    warnings = [line for line in out.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: docs/.gitignore: ignore file: larger than 1,024 KiB: only the lines in its first "
                        "1,024 KiB are used"]
    summary = json.loads(out.stdout)
    assert (summary["added"], summary["failed"], summary["skipped"]["ignored"]) == (1, 0, 1)


def test_the_watcher_writes_nothing_ignored_and_a_changed_gitignore_syncs_its_folder(
    tmp_path: Path, ix: Index  # noqa: F811
) -> None:
    root = project(tmp_path)
    with running(ix, root) as record:
        assert names(ix) == {"guide.md"}
        (root / "build" / "html" / "new.html").write_text("<p>Built again.</p>")
        (root / "docs" / "new.md").write_text("A new page.")
        session = record.next(1)
        # The build output's events went nowhere: the session is the new page's alone.
        assert session.changed == 1 and session.summary is not None and session.summary.added == 1
        (root / "docs" / ".gitignore").write_text("new.md\n")
        removed = record.next(2)
        assert removed.summary is not None and removed.summary.removed == 1
        assert names(ix) == {"guide.md"}
        (root / ".gitignore").write_text("node_modules/\n")  # build/ and *.gen.md no longer ignored
        deadline = time.monotonic() + 30
        while names(ix) != {"guide.md", "api.gen.md", "guide.html", "new.html"}:
            assert time.monotonic() < deadline, (names(ix), record.sessions)
            time.sleep(0.05)


def test_watch_honours_the_ignore_files_and_no_ignore_turns_them_off(tmp_path: Path) -> None:
    root = project(tmp_path)
    with watching(root, tmp_path / "ix") as w:
        first = w.session()
        assert (first["added"], first["skipped"]["ignored"]) == (1, 3)
        assert w.stop() == 0
    w = Watching(root, tmp_path / "ix", None, "--no-ignore")
    try:
        assert w.session()["added"] == 3
        assert w.stop() == 0
    finally:
        if w.process.poll() is None:
            w.process.kill()
            w.process.wait(timeout=30)
