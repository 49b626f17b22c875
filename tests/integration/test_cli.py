"""The command line: JSON shapes, messages and exit codes, with the real model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchapp.cli import app

runner = CliRunner()
HIT_FIELDS = {
    "rank", "score", "dense_score", "lexical_score", "passage_id", "path", "source", "title", "start", "end", "text",
    "metadata", "snippet", "explain", "other_passages", "section", "line", "column", "end_line", "end_column",
    "text_form", "scores", "match_line", "page", "source_lines",
}
SUMMARY_FIELDS = {"added", "updated", "unchanged", "removed", "failed", "passages_embedded", "passages_reused",
                  "seconds", "failures", "skipped", "warnings", "skipped_files", "skipped_files_omitted"}


def make_docs(root: Path) -> None:
    root.mkdir()
    (root / "keys.md").write_text("# Keys\n\nRotate the signing keys with `keyctl rotate` every quarter.\n")
    (root / "garden.txt").write_text("Water tomatoes deeply twice a week in summer.\n")
    (root / "bad.pdf").write_bytes(b"not a pdf at all")


def test_ingest_query_status_json(tmp_path: Path, real_encoder) -> None:  # type: ignore[no-untyped-def]
    make_docs(tmp_path / "docs")
    res = runner.invoke(app, ["ingest", "docs", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert set(summary) == SUMMARY_FIELDS
    assert (summary["added"], summary["failed"]) == (2, 1)
    assert summary["failures"][0]["path"].endswith("bad.pdf")
    assert "warning:" in res.stderr and "bad.pdf" in res.stderr
    assert (tmp_path / ".searchapp" / "index.db").exists()  # the default index location

    res = runner.invoke(app, ["query", "how do I rotate the signing keys?", "--json", "-k", "2"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["query"] == "how do I rotate the signing keys?" and out["mode"] == "hybrid"
    assert set(out["hits"][0]) == HIT_FIELDS
    assert out["hits"][0]["path"].endswith("keys.md") and out["hits"][0]["source"] == "file"
    assert len(out["hits"]) == 2

    res = runner.invoke(app, ["query", "tomatoes", "--mode", "lexical"])
    assert res.exit_code == 0 and "garden.txt" in res.stdout

    # a path filter given relative to the working folder, as a user types it
    res = runner.invoke(app, ["query", "how do I rotate the signing keys?", "--json", "--path-glob", "*.txt"])
    assert [Path(h["path"]).name for h in json.loads(res.stdout)["hits"]] == ["garden.txt"]
    res = runner.invoke(app, ["query", "tomatoes", "--json", "--path-prefix", "docs/keys.md"])
    assert [Path(h["path"]).name for h in json.loads(res.stdout)["hits"]] == ["keys.md"]
    res = runner.invoke(app, ["query", "tomatoes", "--json", "--filter", "team=x"])
    assert res.exit_code == 1 and json.loads(res.stdout)["hits"] == []  # no hit: 1, as grep
    res = runner.invoke(app, ["query", "tomatoes", "--filter", "team"])
    assert res.exit_code == 2 and "KEY=VALUE" in res.stderr

    res = runner.invoke(app, ["status", "--json"])
    stats = json.loads(res.stdout)
    assert (stats["documents"], stats["model"], stats["pooling"], stats["dimension"]) == (
        2, "all-MiniLM-L6-v2", "mean", 384,
    )
    assert stats["disk_bytes"] > 0
    # What the vectors were embedded in: this machine's auto precision for this index, the same the eval cache
    # keys use (fp32 where the flags would say int8 but the ONNX graph is switched off, as in the suite).
    from searchapp.encode.spec import EncoderSpec

    assert stats["vectors_precision"] == EncoderSpec(precision="auto").embeds_in
    assert stats["vectors_encoder"] == "torch"  # the suite's ONNX and OpenVINO paths are off (conftest)
    # This machine's cache, under the test's home: where the exported graphs go, and how big they are.
    assert stats["cache_dir"] == str(Path.home() / ".cache" / "searchapp")
    assert stats["cache_bytes"] == sum(f.stat().st_size for f in Path(stats["cache_dir"]).rglob("*") if f.is_file())
    assert "cache_dir: " in runner.invoke(app, ["status"]).stdout

    res = runner.invoke(app, ["ingest", "docs"])
    assert res.exit_code == 0
    assert "unchanged 2" in res.stdout and "0 passages embedded" in res.stdout


def test_index_from_environment(tmp_path: Path, monkeypatch, real_encoder) -> None:  # type: ignore[no-untyped-def]
    make_docs(tmp_path / "docs")
    monkeypatch.setenv("SEARCHAPP_INDEX", str(tmp_path / "elsewhere"))
    assert runner.invoke(app, ["ingest", "docs"]).exit_code == 0
    assert (tmp_path / "elsewhere" / "index.db").exists()
    assert runner.invoke(app, ["query", "keys", "--mode", "lexical"]).exit_code == 0


def test_missing_index_says_how_to_create_one(tmp_path: Path) -> None:
    res = runner.invoke(app, ["query", "anything"])
    assert res.exit_code == 2
    assert "searchapp ingest" in res.stderr and "Traceback" not in res.output


def test_empty_index_says_how_to_fill_it(tmp_path: Path, real_encoder) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "empty").mkdir()
    assert runner.invoke(app, ["ingest", "empty"]).exit_code == 0
    res = runner.invoke(app, ["query", "anything", "--mode", "lexical"])
    assert res.exit_code == 2 and "empty" in res.stderr and "searchapp ingest" in res.stderr


def test_bad_arguments_are_one_line_errors(tmp_path: Path) -> None:
    res = runner.invoke(app, ["ingest", "no-such-folder"])
    assert res.exit_code == 2 and "no-such-folder" in res.stderr and "Traceback" not in res.output
    res = runner.invoke(app, ["ingest", ".", "--pooling", "median"])
    assert res.exit_code == 2 and "unknown pooling" in res.stderr


def test_all_files_failing_is_a_failed_command(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_bytes(b"\x00\x01 binary" * 100)
    res = runner.invoke(app, ["ingest", "docs"])
    assert res.exit_code == 2 and "a.txt" in res.stderr


def test_help_does_not_import_torch() -> None:
    code = (
        "import sys\nfrom searchapp.cli import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('HEAVY', [m for m in ('torch', 'transformers', 'faiss') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in out


def test_query_file_runs_every_line_as_json_lines(tmp_path: Path, real_encoder) -> None:  # type: ignore[no-untyped-def]
    make_docs(tmp_path / "docs")
    assert runner.invoke(app, ["ingest", "docs"]).exit_code == 0
    (tmp_path / "q.txt").write_text("how do I rotate the signing keys?\n\nwatering tomatoes\n")
    res = runner.invoke(app, ["query", "--file", "q.txt", "--json", "-k", "1"])
    assert res.exit_code == 0, res.output
    docs = [json.loads(line) for line in res.stdout.splitlines()]
    assert [d["query"] for d in docs] == ["how do I rotate the signing keys?", "watering tomatoes"]
    assert docs[0]["hits"][0]["path"].endswith("keys.md") and docs[1]["hits"][0]["path"].endswith("garden.txt")
    single = json.loads(runner.invoke(app, ["query", "watering tomatoes", "--json", "-k", "1"]).stdout)
    assert [h["passage_id"] for h in single["hits"]] == [h["passage_id"] for h in docs[1]["hits"]]
    # The same question alone or in a batch: the same vector, to fp32's rounding; in bf16 (the suite run as a bf16
    # CPU) a batch's padding changes the rounding of the question's own tokens by a few parts in ten thousand.
    from searchapp.encode.spec import EncoderSpec

    tol = 1e-5 if EncoderSpec(precision="auto").embeds_in == "fp32" else 2e-3
    assert single["hits"][0]["dense_score"] == pytest.approx(docs[1]["hits"][0]["dense_score"], abs=tol)
    res = runner.invoke(app, ["query", "x", "--file", "q.txt"])
    assert res.exit_code == 2 and "not both" in res.output  # a usage error, as docs/cli.md says
