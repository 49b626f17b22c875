from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from searchapp.cli import app

PAIRS = [
    (5.0, "A man is playing a guitar.", "A man plays the guitar."),
    (4.2, "A child rides a horse.", "A kid is riding a pony."),
    (3.0, "The cat sleeps on the sofa.", "A cat is lying on a couch in the sun."),
    (1.5, "A woman is slicing onions.", "A man is cutting bread."),
    (0.2, "The stock market fell sharply today.", "A dog runs across the beach."),
    (0.0, "Rain is expected tomorrow.", "He plays the violin in an orchestra."),
]


def write_sts(path: Path) -> None:
    path.write_text("".join(f"g\tx\t2012\t{i:04d}\t{s}\t{a}\t{b}\n" for i, (s, a, b) in enumerate(PAIRS)))


def test_eval_sts_json_and_ordering(tmp_path: Path, real_encoder) -> None:  # type: ignore[no-untyped-def]
    write_sts(tmp_path / "sts.csv")
    runner = CliRunner()
    res = runner.invoke(app, ["eval-sts", "sts.csv", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["pairs"] == 6 and out["pooling"] == "mean"
    assert out["spearman"] > 80  # clearly graded pairs: the model must order them nearly right
    # Embedded as an index would be: auto resolved as the index's encoder choice resolves it (fp32 in the suite,
    # whose ONNX path is off), or the precision asked.
    from searchapp.encode.spec import EncoderSpec

    assert out["precision"] == EncoderSpec(precision="auto").embeds_in
    res = runner.invoke(app, ["eval-sts", "sts.csv", "--precision", "fp16", "--json"])
    assert res.exit_code == 2 and "fp16 runs on a CUDA GPU only" in res.stderr
    res = runner.invoke(app, ["eval-sts", "sts.csv", "--pooling", "sbert-wk", "--pooling-param", "layer_start=4"])
    assert res.exit_code == 0 and "Spearman" in res.stdout


def test_eval_sts_bad_file(tmp_path: Path) -> None:
    (tmp_path / "bad.csv").write_text("only\ttwo\n")
    res = CliRunner().invoke(app, ["eval-sts", "bad.csv"])
    assert res.exit_code == 2 and "bad.csv:1" in res.stderr
