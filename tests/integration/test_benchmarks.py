"""The maintained benchmarks (benchmarks/*.py) each run with tiny sizes, so that a change that breaks one is seen
here and not when a figure is next measured; so does each study kept in benchmarks/studies/, the ones whose figure
is the reason for a default that ships (:data:`STUDIES`). The other studies are retired: the docs cite them at the
commit that holds them, with their figures.

A script runs in this process as ``python benchmarks/NAME.py ARGS --json`` would (benchmarks/ first on
``sys.path``, its modules imported afresh), so that the model loads once for all of them; its data are tiny sets
of the visible sets' layout (``SEARCHAPP_BENCH_DATA``) and their eval indexes are built here. peers.py is run by
tests/integration/test_peers.py.
"""

from __future__ import annotations

import ast
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
# Where each maintained script is run (this file's tests, or the one named).
RUN_BY = {"query.py": "here", "ingest.py": "here", "encode.py": "here", "ann_recall.py": "here",
          "pg_recall.py": "here", "gpu_check.sh": "here", "defaults.py": "here", "startup.py": "here",
          "reingest.py": "here",
          "peers.py": "tests/integration/test_peers.py"}
# The studies kept, each for the shipped default its figure backs; each is run by a test here (``run`` with
# "studies/NAME").
STUDIES = {"cpu_paths.py": "precision auto: bf16 (through OpenVINO where installed) on a CPU with bf16 instructions",
           "int8_dynamic.py": "precision auto: int8 (the ONNX graph, per channel, 7-bit) on an AVX2 CPU without bf16",
           "pooling_sweep.py": "pooling mean",
           "models.py": "the model all-MiniLM-L6-v2",
           "lexical_engine_quality.py": "a new folder index's lexical engine: tantivy",
           "known_item_ranking.py": "document_weight 0.5, document_threshold 1 and the agreement rule"}
# How the docs cite a retired study: the commit that holds every study, then its path.
RETIRED_AT = "git show 34bc172:"
# Private names the maintained scripts still reach for, each until the class it belongs to has a public way.
PRIVATE_USES: set[tuple[str, str]] = set()

WORDS = ("signing keys rotate quarterly through the key management service while backups of the database are "
         "kept in cold storage for ninety days and restored once a month to check that they still open").split()


def write_set(root: Path, docs: int = 6) -> Path:
    """A tiny set in the layout of the visible ones (BEIR: corpus, queries, qrels of the train split), each document
    over 126 word pieces long (benchmarks/encode.py cuts passages of that many)."""
    root.mkdir(parents=True)
    (root / "qrels").mkdir()
    texts = {f"d{i}": " ".join(WORDS[(i + j) % len(WORDS)] for j in range(150)) for i in range(docs)}
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": f"Doc {d}", "text": t}) + "\n"
                                               for d, t in texts.items()))
    queries = {f"q{i}": f"how long are {WORDS[i]} kept" for i in range(docs)}
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items()))
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n"
                                              + "".join(f"q{i}\td{i}\t1\n" for i in range(docs)))
    return root


@pytest.fixture()
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data folder holding a tiny ``scifact`` (the set the scripts read by name), for this test's scripts."""
    folder = tmp_path / "data"
    write_set(folder / "scifact")
    monkeypatch.setenv("SEARCHAPP_BENCH_DATA", str(folder))
    return folder


@pytest.fixture()
def eval_cache(data: Path, real_encoder) -> Path:  # type: ignore[no-untyped-def]
    """The tiny scifact's fp32 eval index, where `searchapp eval --precision fp32` leaves it (ann_recall.py and
    pg_recall.py read its vectors)."""
    from searchapp import IndexConfig
    from searchapp.eval_index import prepare

    prepare(data / "scifact", "train", IndexConfig(precision="fp32"))
    return data


def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, *args: str) -> Any:
    """``benchmarks/NAME ARGS --json`` run in this process (NAME ``studies/STUDY.py`` for a study); its JSON."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    monkeypatch.syspath_prepend(str((BENCHMARKS / name).parent))  # a study imports the others by name
    folders = (BENCHMARKS, BENCHMARKS / "studies")
    for module in [m for m in sys.modules if any((d / f"{m}.py").exists() for d in folders)]:
        monkeypatch.delitem(sys.modules, module)  # imported afresh: _common reads SEARCHAPP_BENCH_DATA
    monkeypatch.setattr(sys, "argv", [str(BENCHMARKS / name), *args, "--json"])
    capsys.readouterr()
    runpy.run_path(str(BENCHMARKS / name), run_name="__main__")
    return json.loads(capsys.readouterr().out)


def test_another_checkout_named_is_the_one_measured(tmp_path: Path) -> None:
    # A before / after comparison runs these scripts against an older checkout: PYTHONPATH naming it was not
    # enough (_common put this checkout in front of it, and both columns timed this version).
    other = tmp_path / "checkout"
    (other / "searchapp").mkdir(parents=True)
    (other / "searchapp" / "__init__.py").write_text("")
    probe = ("import json, _common, searchapp; "
             "print(json.dumps([searchapp.__file__, _common.machine()['searchapp_from']]))")
    for env, want in (({"SEARCHAPP_BENCH_CHECKOUT": str(other)}, other), ({"PYTHONPATH": str(other)}, ROOT)):
        out = subprocess.run([sys.executable, "-c", probe], cwd=BENCHMARKS, capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": "", "SEARCHAPP_BENCH_CHECKOUT": "", **env}, check=True)
        imported, recorded = json.loads(out.stdout)
        assert Path(imported).resolve() == (want / "searchapp" / "__init__.py").resolve()
        assert Path(recorded) == want.resolve()


def test_every_maintained_script_is_run_by_a_test() -> None:
    scripts = {p.name for p in [*BENCHMARKS.glob("*.py"), *BENCHMARKS.glob("*.sh")] if not p.name.startswith("_")}
    assert scripts == set(RUN_BY), "a maintained script without its smoke test (or a study outside studies/)"
    for name, where in RUN_BY.items():
        test = Path(__file__) if where == "here" else ROOT / where
        assert name in test.read_text(encoding="utf-8")


def test_the_maintained_scripts_call_no_private_name_of_searchapp() -> None:
    found = set()
    for path in BENCHMARKS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                found.add((path.name, node.attr))
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("searchapp"):
                found.update((path.name, a.name) for a in node.names if a.name.startswith("_"))
    assert found == PRIVATE_USES


def test_every_study_kept_backs_a_default_names_its_figure_and_is_run_by_a_test() -> None:
    studies = {p.name for p in (BENCHMARKS / "studies").glob("*.py") if p.name != "_path.py"}
    assert studies == set(STUDIES), "a study kept without its smoke test here (or one retired still listed)"
    docs = ROOT / "docs"
    for name in studies:
        doc = ast.get_docstring(ast.parse((BENCHMARKS / "studies" / name).read_text(encoding="utf-8"))) or ""
        assert "A study, kept for the figure it backs: docs/" in doc, name
        cited = doc.split("A study, kept for the figure it backs: ")[1].split(",")[0]
        assert f"benchmarks/studies/{name}" in (docs / cited.removeprefix("docs/")).read_text(encoding="utf-8")
    run_here = set()
    for node in ast.walk(ast.parse(Path(__file__).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "run" and len(node.args) > 2:
            target = node.args[2]
            if isinstance(target, ast.Constant) and str(target.value).startswith("studies/"):
                run_here.add(str(target.value).removeprefix("studies/"))
    assert run_here == studies


def test_a_retired_study_is_cited_at_the_commit_that_holds_it() -> None:
    """Docs cite a retired study as ``git show 34bc172:benchmarks/studies/NAME.py`` (retired in a later commit),
    never by a path that is gone; a command block may run it once the citation has put it back."""
    import re

    for doc in (ROOT / "docs").glob("*.md"):
        text = doc.read_text(encoding="utf-8")
        for name in set(re.findall(r"benchmarks/studies/(\w+\.py)", text)) - {*STUDIES, "NAME.py"}:
            assert f"{RETIRED_AT}benchmarks/studies/{name}" in text, (doc.name, name)
            for line in text.splitlines():
                if not line.startswith("    "):
                    for hit in re.finditer(rf"benchmarks/studies/{name}", line):
                        assert line[: hit.start()].endswith(RETIRED_AT), (doc.name, line)


def test_query(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
               request: pytest.FixtureRequest) -> None:
    """The folder, and PostgreSQL in the same run wherever the session's server starts (CI's does)."""
    from tests.pg_server import available

    postgres = ["--index", request.getfixturevalue("pg_url")] if available() is None else []
    out = run(monkeypatch, capsys, "query.py", "--passages", "300", "--queries", "5", "--bm25-max", "300", *postgres)
    assert out["passages"] == 300 and out["vector_index"] == "flat"
    for key in ("lexical_p50_ms", "dense_p50_ms", "hybrid_p50_ms", "hybrid_grouped_p50_ms", "faiss_exact_p50_ms",
                "rank_bm25_p50_ms", "mixed_lexical_p50_ms", "mixed_hybrid_p95_ms", "frequent_lexical_p50_ms",
                "frequent_hybrid_p50_ms"):
        assert out[key] > 0, key
    from searchapp.store import lexical_index

    assert out["lexical_engine"] == lexical_index.DEFAULT and out["lexical_mb"] >= 0  # a new index's engine
    if postgres:
        assert out["postgresql_build_s"] is not None and out["postgresql_bm25_build_s"] >= 0
        assert out["postgresql_vector_index"] == "flat" and out["postgresql_hybrid_p50_ms"] > 0


def test_startup(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # This checkout against itself as the baseline: both are timed, and the ratio is theirs.
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "split.md").write_text("# Splitting\n\nPassages are split by word pieces.\n", encoding="utf-8")
    out = run(monkeypatch, capsys, "startup.py", "--rounds", "1", "--sample", str(folder), "--baseline", str(ROOT))
    for name in ("this", "baseline"):
        assert set(out["median_s"][name]) == {"help", "query"} and min(out["median_s"][name].values()) > 0
    assert out["ratio"]["help"] == out["median_s"]["this"]["help"] / out["median_s"]["baseline"]["help"]
    assert out["floor_s"] > 0 and out["floor_ratio"] == out["floor_s"] / out["median_s"]["baseline"]["query"]
    assert out["floor_session"] is False  # the tests embed queries without ONNX Runtime: the imports alone


def test_ingest(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data: Path,
                real_encoder) -> None:  # type: ignore[no-untyped-def]
    from collections import Counter

    from searchapp import Index
    from searchapp.encode.transformer import TransformerModel
    from searchapp.ingest import pipeline

    # What the ingest hands its encoder, and what torch's forward pass is run over once the ingest is done (the
    # raw pass, and the index's own encoder where that is torch).
    made: dict[str, list[str]] = {}  # a document's text -> its passages' inputs (built more than once: reuse asks)
    forwarded: Counter[str] = Counter()
    inputs, forward, ingest = pipeline.passage_inputs, TransformerModel.forward, Index.ingest

    def passage_inputs(text: str, *args: Any) -> list[str]:
        made[text] = inputs(text, *args)
        return made[text]

    def counted(self: TransformerModel, texts: list[str], *args: Any, **kwargs: Any) -> Any:
        forwarded.update(texts)
        return forward(self, texts, *args, **kwargs)

    def ingested(self: Index, *args: Any, **kwargs: Any) -> Any:
        summary = ingest(self, *args, **kwargs)
        forwarded.clear()
        return summary

    monkeypatch.setattr(pipeline, "passage_inputs", passage_inputs)
    monkeypatch.setattr(TransformerModel, "forward", counted)
    monkeypatch.setattr(Index, "ingest", ingested)
    out = run(monkeypatch, capsys, "ingest.py", "--docs", "3", "--precision", "fp32", "--batch", "8")
    (row,) = out["rows"]
    assert row["documents"] == 3 and row["passages"] >= 3 and row["ingest_over_raw_fp32"] > 0
    assert row["own_encode_passages_per_s"] > 0 and row["ingest_over_own_encode"] > 0
    # The raw pass does the ingest's work: each passage with its section path (passage_context "section"), not
    # the stored passage alone, which is fewer tokens and flattered the raw pass.
    embedded = [t for texts in made.values() for t in texts]
    assert len(embedded) == row["passages"]
    assert not Counter(embedded) - forwarded


def test_reingest(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data: Path,
                  real_encoder) -> None:  # type: ignore[no-untyped-def]
    out = run(monkeypatch, capsys, "reingest.py", "--passages", "3", "--precision", "fp32")
    (row,) = out["runs"]
    n = out["passages"]
    assert n >= 3 and row["no_reuse_passages"] == n
    # Without reuse both sessions embed the whole page again; with it the edit embeds what it touched and the
    # rename nothing (the page's title is its level-1 heading, not its file name).
    assert row["no_reuse_edit_embedded"] >= n and row["no_reuse_rename_embedded"] == n
    assert 1 <= row["reuse_edit_embedded"] < n and row["reuse_edit_reused"] >= n - 2
    assert (row["reuse_rename_embedded"], row["reuse_rename_reused"]) == (0, row["reuse_edit_embedded"]
                                                                        + row["reuse_edit_reused"])
    assert out["edit_no_reuse_over_reuse"] > 0 and out["rename_no_reuse_over_reuse"] > 0


def test_encode(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data: Path) -> None:
    import torch

    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)  # the script's thread count, not this process's
    out = run(monkeypatch, capsys, "encode.py", "--passages", "2", "--batch", "2", "--runs", "1",
              "--reference-sample", "1")
    assert out["passages"] == 2 and len(out["rows"]) == 9 and all(r["passages_per_s"] > 0 for r in out["rows"])


def test_ann_recall(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], eval_cache: Path) -> None:
    out = run(monkeypatch, capsys, "ann_recall.py", "--sets", "scifact:train", "--scale", "400")
    assert out["vectors"] == 400 and out["queries"] == 6
    assert all(0 <= r["recall@10"] <= 1 for r in out["rows"]) and sum(r["default"] for r in out["rows"]) == 1


@pytest.fixture()
def notes(eval_cache: Path) -> Path:
    """A folder of three documents with a known-item question each, ``notes`` beside the tiny scifact."""
    folder = eval_cache / "notes" / "docs"
    folder.mkdir(parents=True)
    pages = {"keys.md": "# Keys\n\nSigning keys rotate quarterly through the key management service.\n",
             "backups.md": "# Backups\n\nBackups of the database are kept in cold storage for ninety days.\n",
             "restore.md": "# Restore\n\nA backup is restored once a month to check that it still opens.\n"}
    for name, text in pages.items():
        (folder / name).write_text(text, encoding="utf-8")
    (eval_cache / "notes" / "questions.tsv").write_text(
        "how often do signing keys rotate?\tkeys.md\nhow long are backups kept?\tbackups.md\n"
        "when is a backup restored?\trestore.md\n", encoding="utf-8")
    return eval_cache


@pytest.mark.usefixtures("notes")
def test_defaults(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Leave-one-collection-out over a split and a folder of documents with known-item questions."""
    out = run(monkeypatch, capsys, "defaults.py", "--sets", "scifact:train", "--folders", "notes",
              "--precision", "fp32", "--question", "0.8,0.9", "--statement", "0.5", "--spread", "1")
    assert out["candidates"] == 2 and out["chosen_on_all"]["alpha_question"] in (0.8, 0.9)
    assert set(out["collections"]) == set(out["loco"]) == {"scifact train", "notes"}
    notes = out["collections"]["notes"]
    assert notes["queries"] == 3 and set(notes["first"]) == {"lexical", "dense", "default", "chosen"}
    assert all(0 <= v <= 3 for v in notes["first"].values())
    for r in out["loco"].values():
        low, high = r["margin"]["ci95"]
        assert low <= r["margin"]["mean"] <= high and 0 <= r["value"] <= 1
    assert out["below"] == [n for n, r in out["loco"].items() if r["margin"]["ci95"][1] < 0]
    assert out["ships"] == (not out["below"])


def test_pg_recall(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], eval_cache: Path,
                   pg_url: str) -> None:
    url = pg_url.split("&schema=")[0]  # the script names its own schemas
    out = run(monkeypatch, capsys, "pg_recall.py", "--index", url, "--scale", "300", "--types", "vector")
    (row,) = out["rows"]
    assert out["vectors"] == 300 and row["vector_type"] == "vector" and 0 < row["recall@10"] <= 1


@pytest.mark.parametrize("case", ["no GPU", "no packages", "bad size"])
def test_the_gpu_check_says_in_one_line_why_it_measured_nothing(tmp_path: Path, case: str) -> None:
    """benchmarks/gpu_check.sh runs where a CUDA GPU is; here (none) it must stop at its checks with one line and
    status 2, never a traceback or a half-run benchmark."""
    import os
    import subprocess

    env = {**os.environ, "OUT": str(tmp_path), "CUDA_VISIBLE_DEVICES": ""}
    args = ["bash", str(BENCHMARKS / "gpu_check.sh")]
    if case == "no packages":
        env["PYTHON"] = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else "python3"
        env["PYTHONNOUSERSITE"] = "1"
    elif case == "bad size":
        args.append("3k")
    else:
        env["PYTHON"] = sys.executable
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("gpu_check: "), done.stderr
    assert {"no GPU": "no CUDA GPU", "no packages": "lacks", "bad size": "whole number"}[case] in lines[0]
    assert not (tmp_path / "gpu_check.json").exists()


def test_study_cpu_paths(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data: Path) -> None:
    """Every CPU path installed here (OpenVINO's where its package is), timed and scored on the tiny split."""
    import torch

    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)
    out = run(monkeypatch, capsys, "studies/cpu_paths.py", "--passages", "2", "--calibration", "2", "--runs", "1",
              "--sets", "scifact")
    rows = out["rows"]
    assert {"torch fp32", "torch bf16", "ONNX Runtime fp32 (fused)"} <= set(rows)
    assert rows["torch fp32"]["speedup_vs_torch_fp32"] == 1.0
    for row in rows.values():
        assert row["seconds"] >= 0 and 0.5 < row["min_cosine_to_fp32"] <= 1.0001
        assert 0 <= row["ndcg@10 scifact train"] <= 1


def test_study_int8_dynamic(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data: Path) -> None:
    """The candidate `auto` ships on an AVX2 CPU without bf16, against the fp32 graph."""
    import torch

    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)
    out = run(monkeypatch, capsys, "studies/int8_dynamic.py", "--passages", "2", "--runs", "1", "--sets", "scifact",
              "--only", "all, per channel, 7-bit")
    rows = out["rows"]
    assert set(rows) == {"torch fp32", "ONNX Runtime fp32 (fused)", "int8 dynamic: all, per channel, 7-bit"}
    int8 = rows["int8 dynamic: all, per channel, 7-bit"]
    assert 0.9 < int8["min_cosine_to_fp32"] <= int8["mean_cosine_to_fp32"] <= 1.0001
    assert 0 <= int8["ndcg@10 scifact train"] <= 1 and "ndcg@10 scifact train" not in rows["torch fp32"]


def test_study_pooling_sweep(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data: Path) -> None:
    out = run(monkeypatch, capsys, "studies/pooling_sweep.py", "--sets", "scifact", "--study", "paper")
    (scores,) = out["results"].values()
    assert set(scores) == set(out["strategies"]) and "mean" in scores
    assert all(0 <= v <= 1 for v in scores.values())


def test_study_models(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data: Path) -> None:
    """The bundled model timed; the larger one reported missing where its part packages are not installed."""
    out = run(monkeypatch, capsys, "studies/models.py", "--passages", "2", "--pieces", "16", "--runs", "1",
              "--batch", "2", "--precision", "fp32")
    models = {r["model"]: r for r in out["rows"]}
    assert models["all-MiniLM-L6-v2"]["time_vs_minilm_fp32"] == 1.0 and models["all-MiniLM-L6-v2"]["layers"] == 6
    assert set(models) | set(out["missing"]) == {"all-MiniLM-L6-v2", "all-mpnet-base-v2"}


def test_study_lexical_engine_quality(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                      notes: Path) -> None:
    pytest.importorskip("tantivy")
    out = run(monkeypatch, capsys, "studies/lexical_engine_quality.py", "--precision", "fp32",
              "--sets", "scifact:train", "--folders", "notes")
    assert set(out["collections"]) == {"scifact train", "notes"}
    for row in out["collections"].values():
        for mode in ("lexical", "hybrid"):
            low, high = row[mode]["ci95"]
            assert low <= row[mode]["change"] <= high and 0 <= row[mode]["tantivy"] <= 1
    assert out["collections"]["notes"]["queries"] == 3 and len(out["collections"]["notes"]["lexical"]["first"]) == 2


def test_study_known_item_ranking(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                  notes: Path) -> None:
    out = run(monkeypatch, capsys, "studies/known_item_ranking.py", "--precision", "fp32", "--sets", "scifact:train",
              "--folders", "notes")
    rows = out["rows"]
    assert {r["set"] for r in rows} == {"notes", "scifact"}
    for name in ("notes", "scifact"):
        default = next(r for r in rows if r["set"] == name)
        assert default["candidate"] == "default" and default["change"] == 0
    assert all(r["questions"] == 3 and 0 <= r["first"] <= 3 for r in rows if r["set"] == "notes")
