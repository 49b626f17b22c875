"""``remove LINK`` removes the document indexed under the link's own path, never its target's, and says what it
removed; the `documents` table has a header row (issue: hardening, round 3)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from searchapp import Index, IndexConfig
from searchapp.cli import app


def test_removing_a_file_link_keeps_its_target(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.txt").write_text("rotate the signing keys")
    (docs / "sub" / "b.txt").write_text("water the tomatoes")
    os.symlink(docs / "a.txt", docs / "link.txt")
    os.symlink(docs / "sub", tmp_path / "sublink")
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.ingest(docs)
        assert sorted(Path(d.path).name for d in ix.documents()) == ["a.txt", "b.txt", "link.txt"]
    runner = CliRunner()
    res = runner.invoke(app, ["remove", "docs/link.txt", "--index", "ix"])
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == [f"removed {os.path.join('docs', 'link.txt')}", "removed 1"]
    # A link to a folder still names what is indexed under its real path.
    res = runner.invoke(app, ["remove", "sublink", "--index", "ix", "--json"])
    assert json.loads(res.stdout) == {"removed": 1, "documents": [str((docs / "sub" / "b.txt").resolve())]}
    with Index(tmp_path / "ix", encoder=fake_encoder) as ix:
        assert [Path(d.path).name for d in ix.documents()] == ["a.txt"]


def test_the_documents_table_has_a_header_row(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.add_texts(["rotate the signing keys"], ids=["note"])
    lines = CliRunner().invoke(app, ["documents", "--index", "ix"]).stdout.splitlines()
    assert lines[0].split() == ["passages", "size", "modified", "indexed", "source", "path"]
    assert lines[1].split()[0] == "1" and lines[1].split()[-2:] == ["text", "note"]
    assert lines[0].index("source") == lines[1].index("text")  # the columns line up
