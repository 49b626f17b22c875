"""benchmarks/peers.py on the tiny BEIR set of test_eval.py: searchapp, txtai and LangChain, each in its own process.

The peers run on the interpreter named by SEARCHAPP_PEERS_PYTHON (a virtualenv of their own), or on this one; the
test skips, saying why, when txtai or the LangChain packages cannot be imported there.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

from searchapp.cli import app
from tests.integration.test_eval import write_beir

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "peers.py"
PEERS_PYTHON = os.environ.get("SEARCHAPP_PEERS_PYTHON") or sys.executable
TIMEOUT_S = 900  # three children each loading the model and embedding eight documents: about a minute here


def load_peers() -> ModuleType:
    """benchmarks/peers.py as a module (benchmarks/ is no package)."""
    spec = importlib.util.spec_from_file_location("peers_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_peers(*args: str) -> dict:  # type: ignore[type-arg]
    res = subprocess.run([sys.executable, str(SCRIPT), *args, "--json"], capture_output=True, text=True,
                         timeout=TIMEOUT_S, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.slow
def test_peers_rows_and_searchapp_equals_eval(tmp_path: Path) -> None:
    peers = load_peers()
    missing = [r for r in (peers.importable(PEERS_PYTHON, s) for s in ("txtai", "langchain")) if r is not None]
    if missing:
        pytest.skip("peers not importable (set SEARCHAPP_PEERS_PYTHON to an interpreter that has them): "
                    + "; ".join(missing))
    ds = write_beir(tmp_path / "tiny")
    out = run_peers(str(ds), "--split", "test", "--peer-python", PEERS_PYTHON, "--warmup", "2",
                    "--timeout", str(TIMEOUT_S))

    assert (out["documents"], out["queries"], out["judged"], out["threads"]) == (8, 6, 5, 2)
    assert list(out["systems"]) == ["searchapp", "txtai", "langchain"]
    for name, row in out["systems"].items():
        assert row["ok"], f"{name}: {row.get('reason')}"
        assert set(row["ndcg@10"]) == {"hybrid", "dense", "lexical"}
        assert all(0.0 <= v <= 1.0 for v in row["ndcg@10"].values()), (name, row["ndcg@10"])
        assert row["build_s"] > 0 and row["pieces_per_s"] > 0 and row["load_s"] > 0
        for mode, lat in row["latency_ms"].items():
            assert 0 < lat["p50"] <= lat["p95"], (name, mode, lat)
        assert row["peak_rss_mib"] > 100  # a process holding the model: far more than an empty interpreter
        # Eight short documents: nothing is truncated or split, so every system embeds the corpus's pieces.
        assert row["pieces_embedded"] == out["corpus_pieces"] > 0
        assert row["truncated_documents"] == 0 and row["texts_embedded"] == 8
        assert row["settings"]
    # Every question's answer is plain: any dense retriever with this model finds it first.
    assert out["systems"]["txtai"]["ndcg@10"]["dense"] == pytest.approx(1.0)
    assert out["systems"]["langchain"]["ndcg@10"]["dense"] == pytest.approx(1.0)
    assert out["systems"]["langchain"]["settings"]["ensemble_weights"] == [0.5, 0.5]

    # searchapp's row is `searchapp eval`'s on the same folder (same index settings: fp32, this version's fusion).
    res = CliRunner().invoke(app, ["eval", str(ds), "--split", "test", "--precision", "fp32", "--json"])
    assert res.exit_code == 0, res.output
    evaluated = json.loads(res.stdout)["results"]
    for mode in ("dense", "lexical", "hybrid"):
        assert out["systems"]["searchapp"]["ndcg@10"][mode] == pytest.approx(evaluated[mode]["ndcg@10"], abs=1e-6)


def test_peer_that_cannot_be_imported_is_a_skipped_row(tmp_path: Path) -> None:
    ds = write_beir(tmp_path / "tiny")
    out = run_peers(str(ds), "--split", "test", "--systems", "txtai,langchain",
                    "--peer-python", str(tmp_path / "no-such-python"))
    for name in ("txtai", "langchain"):
        row = out["systems"][name]
        assert row["ok"] is False and row["skipped"] is True
        assert "no-such-python" in row["reason"]


def test_searchapp_row_alone(tmp_path: Path) -> None:
    """searchapp's own row, which needs no peer package: the smoke test of benchmarks/peers.py wherever the peers
    are not installed (tests/integration/test_benchmarks.py)."""
    ds = write_beir(tmp_path / "tiny")
    out = run_peers(str(ds), "--split", "test", "--systems", "searchapp", "--warmup", "1")
    row = out["systems"]["searchapp"]
    assert row["ok"], row.get("reason")
    assert set(row["ndcg@10"]) == {"hybrid", "dense", "lexical"} and row["pieces_embedded"] == out["corpus_pieces"]
    assert row["settings"]["query_encoder"] and row["latency_ms"]["hybrid"]["p50"] > 0
