"""Small command-line behaviours: --version, -h, an explicitly named unsupported file, human-readable sizes, filters
and queries no store can run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from searchapp import __version__
from searchapp.cli import app
from searchapp.setting import MAX_FILTER_KEY_VALUES, MAX_FILTER_KEYS, MAX_GLOB_CHARS

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
    assert res.exit_code == 2
    assert res.stderr.startswith("error: notes.xyz: unsupported file type '.xyz' (supported: ")
    assert len(res.stderr.strip().splitlines()) == 1 and "added" not in res.stdout
    assert not (tmp_path / ".searchapp").exists()  # refused before an index was made


def test_status_shows_the_size_for_a_human(tmp_path: Path, small_index) -> None:  # type: ignore[no-untyped-def]
    small_index.close()
    res = runner.invoke(app, ["status", "-i", str(tmp_path / "ix")])
    line = next(x for x in res.stdout.splitlines() if "disk_bytes" in x)
    assert line.strip().endswith("KiB") or line.strip().endswith("MiB")


def test_a_filter_or_query_no_store_can_run_is_one_error_line(tmp_path: Path, small_index) -> None:  # type: ignore[no-untyped-def]
    # Each was a traceback from the store: "LIKE or GLOB pattern too complex", "Expression tree is too large",
    # a UnicodeEncodeError.
    small_index.close()
    query = ["query", "keys", "-i", str(tmp_path / "ix"), "--mode", "lexical"]
    refused = [
        (["--path-glob", "*" + "a" * 50_000], f"filters.path_glob is 50001 characters long, over the limit of "
         f"{MAX_GLOB_CHARS}"),
        ([a for i in range(5000) for a in ("--filter", f"k{i}=1")], f"filters.metadata has 5000 keys, over the "
         f"limit of {MAX_FILTER_KEYS}"),
        ([a for i in range(MAX_FILTER_KEY_VALUES + 1) for a in ("--filter", f"team={i}")], f"filter 'team' has "
         f"{MAX_FILTER_KEY_VALUES + 1} values, over the limit of {MAX_FILTER_KEY_VALUES} for one key"),
        # An argument's bytes that are not UTF-8 reach Python as lone surrogates (surrogateescape).
        (["--path-prefix", "docs/\udcff"], "filters.path_prefix holds U+DCFF at character 5, a lone surrogate"),
        (["--filter", "team=\udcfe"], "filter 'team' value holds U+DCFE at character 0, a lone surrogate"),
    ]
    for extra, message in refused:
        res = runner.invoke(app, query + extra)
        assert res.exit_code == 2 and res.stderr.startswith(f"error: {message}"), res.stderr[:300]
        assert len(res.stderr.splitlines()) == 1 and len(res.stderr) < 200
    res = runner.invoke(app, ["query", "keys \udcff", "-i", str(tmp_path / "ix"), "--mode", "lexical"])
    assert res.exit_code == 2 and res.stderr == ("error: the query holds U+DCFF at character 5, a lone surrogate, "
                                                 "which is not Unicode text\n")
    for glob in ("*[z-a]*", "*[[:alpha:]]*"):
        assert runner.invoke(app, [*query, "--path-glob", glob]).exit_code == 1  # matches no path: no hit, no error
    # The real command line, with a byte that is not UTF-8 in the query.
    run = subprocess.run([sys.executable, "-m", "searchapp", "query", b"keys \xff", *query[2:]], capture_output=True,
                         env={**os.environ, "PYTHONUTF8": "1"}, timeout=120)
    assert run.returncode == 2 and run.stderr.decode() == ("error: the query holds U+DCFF at character 5, a lone "
                                                           "surrogate, which is not Unicode text\n")


def test_the_results_table_says_what_its_score_is(tmp_path: Path, small_index, fake_model) -> None:  # type: ignore[no-untyped-def]
    small_index.close()
    for mode, meaning in [("lexical", "BM25"), ("dense", "cosine similarity to the query"),
                          ("hybrid", "fused dense and lexical scores")]:
        res = runner.invoke(app, ["query", "signing keys", "-i", str(tmp_path / "ix"), "--mode", mode])
        assert res.exit_code == 0, res.output
        header, first = res.stdout.splitlines()[:2]
        assert header.startswith("  #  score  source  path  (score: " + meaning), header
        assert first.startswith("  1  "), first
