"""`searchapp eval` on a tiny labelled corpus written by the test, with the real model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchapp.cli import app

DOCS = {
    "d1": ("Keys", "Rotate the signing keys every ninety days with the keyctl tool."),
    "d2": ("Garden", "Tomatoes need deep watering twice a week in hot summers."),
    "d3": ("Backups", "Nightly database backups are kept in cold storage for ninety days."),
    "d4": ("Remote work", "Employees may work from home up to three days a week."),
    "d5": ("Cafeteria", "The cafeteria serves vegetarian lunch every weekday."),
    "d6": ("Security", "Passwords must be at least sixteen characters long."),
    "d7": ("Travel", "Book flights through the travel portal at least two weeks ahead."),
    "d8": ("Parking", "Visitors park in the west lot and register at the front desk."),
}
QUERIES = {
    "q1": ("how often are signing keys rotated?", {"d1": 2}),
    "q2": ("watering tomatoes", {"d2": 1}),
    "q3": ("how long do we keep backups", {"d3": 2, "d1": 0}),
    "q4": ("can I work from home", {"d4": 1}),
    "q5": ("vegetarian food", {"d5": 1}),
    "q6": ("no relevant document here", {"d8": 0}),
}


def write_beir(root: Path) -> Path:
    root.mkdir()
    (root / "qrels").mkdir()
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": t, "text": x}) + "\n" for d, (t, x) in DOCS.items())
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, (t, _) in QUERIES.items())
    )
    rows = ["query-id\tcorpus-id\tscore"] + [
        f"{q}\t{d}\t{g}" for q, (_, rels) in QUERIES.items() for d, g in rels.items()
    ]
    (root / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n")
    return root


def test_eval_json_all_modes_and_run_file(tmp_path: Path, real_encoder) -> None:  # type: ignore[no-untyped-def]
    ds = write_beir(tmp_path / "tiny")
    res = CliRunner().invoke(
        app, ["eval", str(ds), "--split", "test", "--mode", "all", "--json", "--run-file", "run.txt"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert (out["dataset"], out["split"], out["queries"], out["skipped"]) == ("tiny", "test", 5, 1)
    assert set(out["results"]) == {"lexical", "dense", "hybrid"}
    for metrics in out["results"].values():
        assert set(metrics) == {"ndcg@10", "mrr@10", "recall@100", "map@100"}
        assert all(0.0 <= v <= 1.0 for v in metrics.values())
    assert out["results"]["dense"]["mrr@10"] == pytest.approx(1.0)  # every question's answer is plain
    assert out["results"]["dense"]["recall@100"] == pytest.approx(1.0)
    lines = (tmp_path / "run.txt").read_text().splitlines()
    assert lines[0].split()[:4] == ["q1", "Q0", "d1", "1"]
    # The index is cached: a second run does not index again.
    res = CliRunner().invoke(app, ["eval", str(ds), "--split", "test", "--mode", "lexical", "--json"])
    assert res.exit_code == 0 and "indexing" not in res.stderr


def test_eval_missing_split_is_a_clear_error(tmp_path: Path) -> None:
    ds = write_beir(tmp_path / "tiny")
    res = CliRunner().invoke(app, ["eval", str(ds), "--split", "dev"])
    assert res.exit_code == 1 and "qrels/dev.tsv" in res.stderr


def test_tune_prints_best_setting_and_writes_config(tmp_path: Path, real_encoder) -> None:  # type: ignore[no-untyped-def]
    ds = write_beir(tmp_path / "tiny")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Something to index.")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", "docs"]).exit_code == 0
    res = runner.invoke(app, ["tune", str(ds), "--split", "test", "--json", "--write-config", ".searchapp"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    expected = {"fusion", "norm", "alpha", "rrf_k", "k0", "alpha_question", "alpha_statement", "metric", "value"}
    assert expected <= set(out)
    assert out["metric"] == "ndcg@10" and 0.0 <= out["value"] <= 1.0
    # The best setting is at least as good as the plain default on the same queries.
    res = runner.invoke(app, ["eval", str(ds), "--split", "test", "--mode", "hybrid", "--json"])
    assert out["value"] >= json.loads(res.stdout)["results"]["hybrid"]["ndcg@10"] - 1e-9
    status = json.loads(runner.invoke(app, ["status", "--json"]).stdout)
    assert (status["fusion"], status["norm"]) == (out["fusion"], out["norm"])


def test_tune_rejects_unknown_metric(tmp_path: Path) -> None:
    ds = write_beir(tmp_path / "tiny")
    res = CliRunner().invoke(app, ["tune", str(ds), "--split", "test", "--metric", "p@5"])
    assert res.exit_code == 1 and "unknown metric" in res.stderr


def test_tune_cross_validates_over_query_folds_and_collections(tmp_path: Path, real_encoder) -> None:  # type: ignore[no-untyped-def]
    a = write_beir(tmp_path / "tiny")
    b = write_beir(tmp_path / "tiny2")
    runner = CliRunner()
    res = runner.invoke(app, ["tune", str(a), "--split", "test", "--cross-validate", "--folds", "2", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["protocol"] == "2-fold over queries" and len(out["folds"]) == 2
    assert sum(f["queries"] for f in out["folds"]) == 5  # every judged query held out once
    for f in out["folds"]:
        lo, hi = f["margin"]["ci95"]
        assert lo <= f["margin"]["mean"] <= hi
        assert f["margin"]["mean"] == pytest.approx(f["value"] - max(f["lexical"], f["dense"]), abs=1e-3)
        assert {"fusion", "alpha_question", "lexical_spread"} <= set(f["chosen"])
    res = runner.invoke(app, ["tune", str(a), f"{b}:test", "--split", "test", "--cross-validate", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["protocol"] == "leave-one-collection-out"
    assert [f["held_out"] for f in out["folds"]] == ["tiny test", "tiny2 test"]
    assert out["worst"] in ("tiny test", "tiny2 test")
    res = runner.invoke(app, ["tune", str(a), str(b), "--split", "test", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["datasets"] == ["tiny test", "tiny2 test"]
