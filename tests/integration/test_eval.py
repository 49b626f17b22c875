"""`searchapp eval` on a tiny labelled corpus written by the test, with the real model."""

from __future__ import annotations

import json
import math
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
    assert res.exit_code == 2 and "qrels/dev.tsv" in res.stderr


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
    # Recommended only after the check: the tuned choice where, made without each fold, it did not lose there.
    assert out["recommended"] in ("tuned", "default", "single") and out["reason"]
    assert sum(f["queries"] for f in out["held_out"]) == out["queries"]
    pooled = sum(f["margin"] * f["queries"] for f in out["held_out"]) / out["queries"]
    assert (out["recommended"] == "tuned") == (pooled >= -1e-4)  # margins are rounded to 4 places
    # The value reported is the recommended setting's, as eval measures it on the same queries.
    flags = ["--fusion", out["fusion"], "--norm", out["norm"], "--alpha", str(out["alpha"])]
    if out["fusion"] == "convex":
        res = runner.invoke(app, ["eval", str(ds), "--split", "test", "--mode", "hybrid", "--json", *flags])
        assert json.loads(res.stdout)["results"]["hybrid"]["ndcg@10"] == pytest.approx(out["value"], abs=1e-4)
    status = json.loads(runner.invoke(app, ["status", "--json"]).stdout)
    assert (status["fusion"], status["norm"]) == (out["fusion"], out["norm"])


def test_tune_rejects_unknown_metric(tmp_path: Path) -> None:
    ds = write_beir(tmp_path / "tiny")
    res = CliRunner().invoke(app, ["tune", str(ds), "--split", "test", "--metric", "p@5"])
    assert res.exit_code == 2 and "unknown metric" in res.stderr


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


# -- eval FOLDER --questions FILE: the known-item check of a folder of documents (fake encoder) ----------------------

FOLDER_DOCS = {
    "keys.md": "# Signing keys\n\nRotate the signing keys every ninety days with the keyctl tool.\n",
    "garden/tomatoes.md": "# Tomatoes\n\nTomatoes need deep watering twice a week in hot summers.\n",
    "backups.md": "# Backups\n\nNightly database backups are kept in cold storage for ninety days.\n",
    "remote.md": "# Remote work\n\nEmployees may work from home up to three days a week.\n",
}
QUESTIONS = (
    "# question<TAB>targets\n"
    "\n"
    "rotate the signing keys\tkeys.md\n"
    "deep watering of tomatoes\tgarden/tomatoes.md|remote.md\n"
    "cold storage backups\tbackups.md\n"
    "zzz unknowable words\tremote.md\n"
)


def write_folder(root: Path, questions: str = QUESTIONS) -> tuple[Path, Path]:
    for rel, text in FOLDER_DOCS.items():
        (root / "docs" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / rel).write_text(text)
    (root / "questions.tsv").write_text(questions)
    return root / "docs", root / "questions.tsv"


def test_eval_questions_json(tmp_path: Path, fake_model) -> None:  # type: ignore[no-untyped-def]
    docs, questions = write_folder(tmp_path)
    res = CliRunner().invoke(app, ["eval", str(docs), "--questions", str(questions), "--mode", "all", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert set(out) == {"folder", "questions", "index", "fusion", "results", "misses"}
    assert out["questions"] == 4 and out["folder"] == str(docs)
    assert set(out["results"]) == {"lexical", "dense", "hybrid"}
    lexical = out["results"]["lexical"]
    assert set(lexical) == {"success@1", "success@5", "mrr@10", "hits@1", "hits@5"}
    # Three questions share words with their target only; the fourth matches nothing lexically.
    assert (lexical["hits@1"], lexical["hits@5"]) == (3, 3)
    assert lexical["success@1"] == pytest.approx(0.75) and lexical["mrr@10"] == pytest.approx(0.75)
    [miss] = out["misses"]["lexical"]
    assert miss == {"line": 6, "question": "zzz unknowable words", "targets": ["remote.md"], "rank": None,
                    "first": None, "above": []}
    assert out["results"]["dense"]["hits@1"] >= 3  # documents by their path relative to the folder
    # A second run ingests incrementally: nothing changed, nothing embedded, the same figures.
    again = CliRunner().invoke(app, ["eval", str(docs), "--questions", str(questions), "--mode", "lexical",
                                     "--json"])
    assert again.exit_code == 0 and "indexed" not in again.stderr
    assert json.loads(again.stdout)["results"]["lexical"] == lexical
    (docs / "keys.md").write_text("# Misc\n\nNothing to see here.\n")
    changed = CliRunner().invoke(app, ["eval", str(docs), "--questions", str(questions), "--mode", "lexical",
                                       "--json"])
    assert changed.exit_code == 0 and "updated 1" in changed.stderr
    assert json.loads(changed.stdout)["results"]["lexical"]["hits@1"] == 2


def test_a_folder_cache_index_is_one_of_this_versions_passage_context(tmp_path: Path, fake_model) -> None:  # type: ignore[no-untyped-def]
    from searchapp import Index, IndexConfig
    from searchapp.evaluate.runner import index_path

    docs, questions = write_folder(tmp_path)
    # What an older version left in the cache: an index whose passages were embedded without their sections.
    older = IndexConfig.from_flat(passage_context="none")
    Index(index_path(docs, older, kind="folder"), create=True, config=older).close()
    res = CliRunner().invoke(app, ["eval", str(docs), "--questions", str(questions), "--mode", "dense", "--json"])
    assert res.exit_code == 0, res.output
    used = json.loads(res.stdout)["index"]
    assert used != str(index_path(docs, older, kind="folder"))
    with Index(used) as ix:
        assert ix.config.passage_context == IndexConfig().passage_context == "section"


@pytest.mark.parametrize("link", ["folder", "parent"])
def test_eval_questions_through_a_link_finds_the_targets(tmp_path: Path, fake_model, link: str) -> None:  # type: ignore[no-untyped-def]
    """The folder given through a symlink (or under a linked parent, as macOS's /tmp): the documents are keyed by
    their real paths, and the questions' targets still name them."""
    docs, questions = write_folder(tmp_path / "real")
    if link == "folder":
        (tmp_path / "docs-link").symlink_to(docs)
        given = tmp_path / "docs-link"
    else:
        (tmp_path / "parent-link").symlink_to(tmp_path / "real")
        given = tmp_path / "parent-link" / "docs"
    res = CliRunner().invoke(app, ["eval", str(given), "--questions", str(questions), "--mode", "lexical", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["results"]["lexical"]["hits@1"] == 3


def test_eval_questions_table_misses_and_given_index(tmp_path: Path, fake_model) -> None:  # type: ignore[no-untyped-def]
    docs, questions = write_folder(tmp_path)
    (docs / "\x1b]0;evil.md").write_text("# Signing keys\n\nrotate the signing keys rotate signing keys\n")
    res = CliRunner().invoke(app, ["eval", str(docs), "--questions", str(questions), "--mode", "lexical",
                                   "--show-misses", "--index", str(tmp_path / "ix")])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[1].split() == ["mode", "first", "top", "5", "MRR@10"]
    assert lines[2].split()[:3] == ["lexical", "2/4", "3/4"]
    assert "lexical: 2 questions whose target was not first" in res.stdout
    assert "(rank 2); first: \\x1b]0;evil.md" in res.stdout and "\x1b" not in res.stdout  # escaped
    assert "target remote.md (not in the top 10); first: nothing" in res.stdout
    assert (tmp_path / "ix").is_dir()


def test_eval_questions_diagnose(tmp_path: Path, fake_model) -> None:  # type: ignore[no-untyped-def]
    from searchapp import Index

    docs, questions = write_folder(tmp_path)
    args = ["eval", str(docs), "--questions", str(questions), "--diagnose"]
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert set(out) == {"folder", "questions", "index", "fusion", "results", "misses", "per_question"}
    per = {d["line"]: d for d in out["per_question"]}
    assert list(per) == [3, 4, 5, 6]
    for mode, result in out["results"].items():  # every mode's ranks, whatever --mode asked
        assert sum(d["ranks"][mode] == 1 for d in per.values()) == result["hits@1"]
    assert per[6]["ranks"]["lexical"] is None and per[6]["targets"] == ["remote.md"]  # no word in common
    with Index(out["index"]) as ix:
        n, engine = ix.stats().passages, ix.stats().facts["lexical_engine"]
    assert per[3]["evidence"]["hybrid_first"] is None
    keys = per[3]["evidence"]["target"]["lexical"]
    assert (keys["document"], keys["section"]) == ("keys.md", "Signing keys")
    # Each word of the question is in the one passage of keys.md: BM25's IDF, ln((N - 1 + 0.5) / 1.5) in FTS5,
    # ln(1 + (N - 1 + 0.5) / 1.5) in tantivy (Lucene's, never negative).
    idf = round(math.log((n - 0.5) / 1.5 + (engine == "tantivy")), 4)
    assert keys["matched_terms"] == [{"term": t, "idf": idf} for t in ("rotate", "signing", "keys")]
    first = per[6]["evidence"]["hybrid_first"]
    assert first["document"] not in ("remote.md", None) and first["matched_terms"] == []
    for d in per.values():
        for e in [*d["evidence"]["target"].values(), d["evidence"]["hybrid_first"]]:
            if e is not None:
                assert e["fused"] == pytest.approx(e["dense_contribution"] + e["lexical_contribution"], abs=2e-4)
    shown = [d for d in per.values() if set(d["ranks"].values()) != {1}]
    table = CliRunner().invoke(app, [*args, "--mode", "lexical"])
    assert table.exit_code == 0, table.output
    assert f"diagnosed: {len(shown)} of 4 questions missed by some mode" in table.stdout
    for d in shown:
        ranks = ", ".join(f"{m} {r if r is not None else '-'}" for m, r in d["ranks"].items())
        assert f"  line {d['line']}: {d['question']}\n    target {' | '.join(d['targets'])}: {ranks}" in table.stdout
    assert f"hybrid first: {first['document']}" in table.stdout and "line 3:" not in table.stdout
    assert "matched terms (IDF): (none)" in table.stdout
    refused = CliRunner().invoke(app, ["eval", str(docs), "--diagnose"])
    assert refused.exit_code == 2 and "--diagnose reads the questions of --questions" in refused.stderr


@pytest.mark.parametrize(("text", "message"), [
    ("no tab here\n", "questions.tsv:1: expected question<TAB>targets, got 1 tab-separated column"),
    ("# fine\nq\tkeys.md\tbackups.md\n", "questions.tsv:2: expected question<TAB>targets, got 3"),
    ("\tkeys.md\n", "questions.tsv:1: the question is empty"),
    ("q\tkeys.md||backups.md\n", "questions.tsv:1: an empty target path"),
    ("q\t../escape.md\n", "questions.tsv:1: target '../escape.md' is not a path inside"),
    ("q\tkeys.md\nq2\tmissing.md\n", "questions.tsv:2: target 'missing.md' is not a file in"),
    ("# only a comment\n\n", "questions.tsv: no question in it"),
])
def test_eval_questions_malformed_lines(tmp_path: Path, fake_model, text: str, message: str) -> None:  # type: ignore[no-untyped-def]
    docs, questions = write_folder(tmp_path, text)
    res = CliRunner().invoke(app, ["eval", str(docs), "--questions", str(questions)])
    assert res.exit_code == 2, res.output
    assert message in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "home" / ".cache").exists()  # refused before any index was made


def test_eval_questions_target_not_indexed(tmp_path: Path, fake_model) -> None:  # type: ignore[no-untyped-def]
    docs, questions = write_folder(tmp_path, "a binary file\tdata.bin\n")
    (docs / "data.bin").write_bytes(b"\x00\x01")
    res = CliRunner().invoke(app, ["eval", str(docs), "--questions", str(questions)])
    assert res.exit_code == 2, res.output
    [error] = [line for line in res.stderr.splitlines() if line.startswith("error:")]  # after the ingest's lines
    assert "questions.tsv:1: target 'data.bin' is not indexed" in error


def test_eval_embeds_the_questions_with_the_query_encoder(tmp_path: Path, fake_model, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The questions go through the encoder the server's queries go through (EncoderSpec.query_encoder: the ONNX
    graph, for a bf16 index embedded by torch or OpenVINO), so that eval scores the served path."""
    from searchapp.encode.spec import EncoderSpec
    from tests.fakes import FakeEncoder

    served = FakeEncoder()
    monkeypatch.setattr(EncoderSpec, "query_encoder", lambda self, ingest: served)
    ds = write_beir(tmp_path / "tiny")
    res = CliRunner().invoke(app, ["eval", str(ds), "--split", "test", "--mode", "dense", "--json"])
    assert res.exit_code == 0, res.output
    questions = {text for q, (text, rels) in QUERIES.items() if any(rels.values())}
    assert questions <= {t for call in served.calls for t in call}
    assert not questions & {t for call in fake_model.calls for t in call}  # the ingest encoder embeds passages
