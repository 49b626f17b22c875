"""Third-party parsers' log lines never reach the user: a malformed PDF read all the same gives one warning line in
searchapp's own words, a broken one its usual warning, and nothing of pypdf's logging is let through."""

from __future__ import annotations

import json
import logging
import re
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchapp.cli import app
from searchapp.ingest.formats.load import load_document
from searchapp.ingest.formats.parsers import quiet_parsers
from searchapp.ingest.formats.pdf import PDF
from tests.fakes import PROGRESS

runner = CliRunner()


def pdf_bytes(text: str) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, text)
    return bytes(pdf.output())


def bad_xref_pdf(text: str) -> bytes:
    """A PDF whose startxref points to the wrong byte: pypdf repairs it, logging warnings as it goes."""
    return re.sub(rb"startxref\s+(\d+)", lambda m: b"startxref\n" + str(int(m.group(1)) + 7).encode(),
                  pdf_bytes(text))


def test_a_malformed_pdf_is_read_with_one_warning_of_ours(tmp_path: Path, fake_model, caplog) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "repaired.pdf").write_bytes(bad_xref_pdf("Quarterly rotation of signing keys."))
    (docs / "broken.pdf").write_bytes(b"not a pdf at all")
    (docs / "fine.pdf").write_bytes(pdf_bytes("Tomatoes want water."))
    caplog.set_level(logging.DEBUG)
    out = runner.invoke(app, ["ingest", str(docs), "--json"])
    assert out.exit_code == 0, out.output
    # Nothing of pypdf's got to logging's handlers (from where it would print, in pypdf's words).
    assert not [r for r in caplog.records if r.name.startswith("pypdf")]
    lines = out.stderr.splitlines()
    assert all(line.startswith(("warning: ", *PROGRESS)) for line in lines), out.stderr
    repaired = [line for line in lines if "repaired.pdf" in line]
    assert len(repaired) == 1 and "malformed PDF, read as far as possible" in repaired[0]
    assert "incorrect startxref pointer" in repaired[0]  # the first problem, inside our one line
    assert len([line for line in lines if "broken.pdf" in line]) == 1
    summary = json.loads(out.stdout)
    assert (summary["added"], summary["failed"]) == (2, 1)
    assert [Path(w["path"]).name for w in summary["warnings"]] == ["repaired.pdf"]
    hits = json.loads(runner.invoke(app, ["query", "rotation", "--mode", "lexical", "--json"]).stdout)["hits"]
    assert [Path(h["path"]).name for h in hits] == ["repaired.pdf"]  # its text was indexed


def test_quiet_parsers_restores_the_loggers_and_drops_library_warnings(tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.DEBUG)
    with quiet_parsers(PDF.loggers) as messages:
        logging.getLogger("pypdf._reader").warning("from inside")
        warnings.warn("a library's advice", UserWarning, stacklevel=1)
    assert messages == ["from inside"] and not caplog.records
    assert logging.getLogger("pypdf").propagate and not logging.getLogger("pypdf").handlers
    logging.getLogger("pypdf._reader").warning("outside")
    assert [r.getMessage() for r in caplog.records] == ["outside"]
    with pytest.warns(UserWarning):
        warnings.warn("outside too", UserWarning, stacklevel=1)


def test_a_clean_pdf_gives_no_note(tmp_path: Path) -> None:
    f = tmp_path / "fine.pdf"
    f.write_bytes(pdf_bytes("Nothing wrong here."))
    notes: list[str] = []
    assert "Nothing wrong" in load_document(f, notes=notes).text and notes == []
