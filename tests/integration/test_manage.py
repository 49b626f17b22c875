"""Managing an index from the command line: `documents` lists what is indexed, `ingest --force` reads every
file again."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from searchapp.cli import app

runner = CliRunner()


def test_documents_lists_files_and_texts_with_passages_and_sizes(tmp_path: Path, small_index, fake_model) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keys.txt").write_text("Rotate the signing keys every quarter.\n")
    ix = str(tmp_path / "ix")
    small_index.close()
    assert runner.invoke(app, ["ingest", str(docs), "-i", ix]).exit_code == 0
    out = json.loads(runner.invoke(app, ["documents", "-i", ix, "--json"]).stdout)["documents"]
    by_path = {d["path"]: d for d in out}
    f = by_path[str(docs / "keys.txt")]
    assert f == {"path": str(docs / "keys.txt"), "source": "file", "title": "keys", "passages": 1,
                 "size": len("Rotate the signing keys every quarter.\n"),
                 "mtime": os.stat(docs / "keys.txt").st_mtime}
    assert by_path["t0"]["source"] == "text" and by_path["t0"]["passages"] == 1 and len(out) == 6
    table = runner.invoke(app, ["documents", "-i", ix])
    assert table.exit_code == 0 and "keys.txt" in table.stdout and "39 B" in table.stdout and "t4" in table.stdout


def test_ingest_force_reads_a_file_whose_size_and_mtime_did_not_change(tmp_path: Path, fake_model) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    f = docs / "notes.txt"
    f.write_text("alpha bravo charlie\n")
    assert runner.invoke(app, ["ingest", str(docs)]).exit_code == 0
    st = os.stat(f)
    f.write_text("delta bravo charlie\n")  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    plain = json.loads(runner.invoke(app, ["ingest", str(docs), "--json"]).stdout)
    assert (plain["unchanged"], plain["updated"]) == (1, 0)
    forced = json.loads(runner.invoke(app, ["ingest", str(docs), "--force", "--json"]).stdout)
    assert (forced["unchanged"], forced["updated"]) == (0, 1)
    hits = json.loads(runner.invoke(app, ["query", "delta", "--mode", "lexical", "--json"]).stdout)["hits"]
    assert [Path(h["path"]).name for h in hits] == ["notes.txt"]
    again = json.loads(runner.invoke(app, ["ingest", str(docs), "--force", "--json"]).stdout)
    assert (again["unchanged"], again["passages_embedded"]) == (1, 0)  # re-read, same hash: not re-embedded


def test_human_size() -> None:
    from searchapp.cli.common import human_size

    assert [human_size(n) for n in (0, 1023, 1024, 1536, 5 * 2**20, 3 * 2**40)] == [
        "0 B", "1023 B", "1.0 KiB", "1.5 KiB", "5.0 MiB", "3.0 TiB",
    ]
