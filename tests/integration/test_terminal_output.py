"""What the command line prints for humans cannot drive the terminal: passage text, file names and index paths
come from files anyone may have written, so escape sequences and bidi overrides in them are shown, not obeyed."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from searchapp import Index, IndexConfig
from searchapp.cli import app

runner = CliRunner()
# Clear screen, window title, OSC 52 (write the clipboard), a C1 CSI, DEL, and a right-to-left override.
HOSTILE = "\x1b[2J\x1b]0;owned\x07\x1b]52;c;ZXZpbA==\x07\x9b31m\x7f\u202egnp.exe\u2066\u200f"
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def test_human_output_escapes_control_and_bidi_characters_and_json_stays_exact(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / f"notes{HOSTILE}.txt").write_text(f"Rotate the signing keys {HOSTILE} every quarter.\n")
    (docs / f"bad{HOSTILE}.pdf").write_bytes(b"not a pdf at all")
    location = tmp_path / f"ix{HOSTILE}"
    with Index(location, create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.ingest(docs)  # the index holds the hostile file name and text; the pdf fails
        # An id may hold no such character (searchapp/ids.py); a title may.
        ix.add_texts([f"Signing keys expire {HOSTILE} yearly."], ids=["note-hostile"], titles=[f"note{HOSTILE}"])

    shown = runner.invoke(app, ["query", "signing keys", "--mode", "lexical", "--index", str(location)])
    assert shown.exit_code == 0, shown.output
    assert "Rotate the signing keys" in shown.stdout and "notes" in shown.stdout
    assert not UNSAFE.search(shown.stdout), repr(shown.stdout)
    assert "\\x1b]52;c;" in shown.stdout and "\\u202e" in shown.stdout  # visible, not obeyed

    raw = runner.invoke(app, ["query", "signing keys", "--mode", "lexical", "--index", str(location), "--json"])
    hits = json.loads(raw.stdout)["hits"]
    assert {h["path"] for h in hits} == {str(docs / f"notes{HOSTILE}.txt"), "note-hostile"}
    assert f"note{HOSTILE}" in {h["title"] for h in hits}
    assert any(HOSTILE in h["text"] for h in hits)

    status = runner.invoke(app, ["status", "--index", str(location)])
    assert status.exit_code == 0 and "ix\\x1b[2J" in status.stdout
    assert not UNSAFE.search(status.stdout), repr(status.stdout)

    ingest = runner.invoke(app, ["ingest", str(docs), "--index", str(location)])
    assert "warning:" in ingest.stderr and "bad" in ingest.stderr
    assert not UNSAFE.search(ingest.stderr), repr(ingest.stderr)

    missing = runner.invoke(app, ["ingest", f"gone{HOSTILE}", "--index", str(location)])
    assert missing.exit_code == 2 and "gone" in missing.stderr
    assert not UNSAFE.search(missing.stderr), repr(missing.stderr)
