"""``eval``, ``eval-sts`` and ``tune``: retrieval and sentence-similarity quality on benchmark sets."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from searchapp.cli.common import (
    JsonOpt,
    MaxTokensOpt,
    ModelOpt,
    PoolingOpt,
    PoolingParamOpt,
    PrecisionOpt,
    emit_json,
    errors,
    fusion_options,
    say,
)
from searchapp.errors import SearchappError
from searchapp.evaluate.metrics import METRICS
from searchapp.query.engine import MODES

if TYPE_CHECKING:
    from searchapp.config import IndexConfig

EvalIndexOpt = Annotated[
    str | None, typer.Option("--index", "-i", help="Index folder or PostgreSQL URL (default: a cached folder).")
]


def register(app: typer.Typer) -> None:
    """Add ``eval``, ``tune`` and ``eval-sts`` to ``app``."""
    app.command("eval")(eval_cmd)
    app.command()(tune)
    app.command("eval-sts")(eval_sts)


def _encoder_config(
    model: str | None,
    pooling: str | None,
    pooling_param: list[str] | None,
    max_tokens: int | None = None,
    precision: str | None = None,
) -> IndexConfig:
    from searchapp.config import IndexConfig
    from searchapp.keyvalue import parse_params

    given: dict[str, Any] = {"model": model, "pooling": pooling, "max_tokens": max_tokens, "precision": precision,
                             "pooling_params": parse_params(pooling_param or []) or None}
    return IndexConfig.from_flat(**{k: v for k, v in given.items() if v is not None})


def _progress(message: str) -> None:
    say(message, err=True)


@fusion_options()
def eval_cmd(
    dataset: Annotated[Path, typer.Argument(help="BEIR-layout folder: corpus.jsonl, queries.jsonl, qrels/.")],
    split: Annotated[str, typer.Option(help="Qrels split: qrels/<split>.tsv.")] = "test",
    mode: Annotated[str, typer.Option(help=f"{', '.join(MODES)} or all.")] = "all",
    model: ModelOpt = None,
    pooling: PoolingOpt = None,
    pooling_param: PoolingParamOpt = None,
    max_tokens: MaxTokensOpt = None,
    precision: PrecisionOpt = None,
    run_file: Annotated[Path | None, typer.Option(help="Write a TREC run (last mode evaluated).")] = None,
    index: EvalIndexOpt = None,
    as_json: JsonOpt = False,
    *,
    fusion: dict[str, Any],
) -> None:
    """Score lexical, dense and hybrid retrieval on a benchmark split: nDCG@10, MRR@10, Recall@100, MAP@100."""
    from searchapp.evaluate.runner import modes_for, write_trec_run
    from searchapp.evaluation import prepare
    from searchapp.query.engine import check_mode, resolve_fusion

    with errors():
        base = _encoder_config(model, pooling, pooling_param, max_tokens, precision)
        modes = modes_for(mode)
        for m in modes:
            check_mode(m)  # before any indexing work
        prepared = prepare(dataset, split, base, k0=fusion["k0"], index_dir=index, progress=_progress)
        settings = resolve_fusion(prepared.fusion, fusion)
        results = {m: prepared.score(m, settings) for m in modes}
        if run_file is not None:
            write_trec_run(run_file, prepared.run_for(modes[-1], settings), f"searchapp-{modes[-1]}")
    skipped = len(prepared.data.qrels) - prepared.judged
    out = {"dataset": dataset.name, "split": split, "queries": prepared.judged, "skipped": skipped,
           "fusion": asdict(settings), "results": results}
    if as_json:
        emit_json(out)
        return
    say(f"{dataset.name} {split}: {prepared.judged} queries ({skipped} skipped: no relevant document)")
    names = list(next(iter(results.values())))
    say(f"{'mode':<10}" + "".join(f"{n:>12}" for n in names))
    for m, metrics in results.items():
        say(f"{m:<10}" + "".join(f"{metrics[n]:>12.4f}" for n in names))


@fusion_options(only=("k0",))
def tune(
    dataset: Annotated[Path, typer.Argument(help="BEIR-layout folder with labelled queries.")],
    split: Annotated[str, typer.Option(help="Qrels split to tune on.")] = "train",
    metric: Annotated[str, typer.Option(help=f"{', '.join(METRICS)}.")] = "ndcg@10",
    model: ModelOpt = None,
    pooling: PoolingOpt = None,
    pooling_param: PoolingParamOpt = None,
    write_config: Annotated[
        str | None, typer.Option(help="Store the best setting as this index's hybrid default (folder or URL).")
    ] = None,
    index: EvalIndexOpt = None,
    as_json: JsonOpt = False,
    *,
    fusion: dict[str, Any],
) -> None:
    """Search the hybrid fusion settings on labelled queries and print the best."""
    from searchapp.evaluate.tune import tune as run_tune
    from searchapp.evaluation import prepare
    from searchapp.index import Index

    with errors():
        if metric not in METRICS:
            raise SearchappError(f"unknown metric '{metric}': use one of {', '.join(METRICS)}")
        base = _encoder_config(model, pooling, pooling_param)
        prepared = prepare(dataset, split, base, k0=fusion["k0"], index_dir=index, progress=_progress)
        result = run_tune(prepared, metric)
        if write_config is not None:
            with Index(write_config) as target:
                target.set_fusion(result.best)
    best = asdict(result.best)
    out = {"fusion": best.pop("method"), **best, "metric": metric, "value": round(result.value, 4),
           "queries": prepared.judged, "dataset": dataset.name, "split": split}
    if as_json:
        emit_json(out)
        return
    say(f"best on {dataset.name} {split} ({prepared.judged} queries): "
               + ", ".join(f"{k}={v}" for k, v in out.items() if k not in ("dataset", "split", "queries")))
    if write_config is not None:
        say(f"written to {write_config}")


def eval_sts(
    file: Annotated[Path, typer.Argument(help="STS-B format file (tab-separated; score col 5, sentences 6-7).")],
    model: ModelOpt = None,
    pooling: PoolingOpt = None,
    pooling_param: PoolingParamOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Spearman x 100 between gold similarity and the cosine of the two sentences' embeddings."""
    from searchapp.encode.encoder import Encoder
    from searchapp.evaluate.sts import read_sts, sts_spearman

    with errors():
        config = _encoder_config(model, pooling, pooling_param)
        encoder = Encoder(model=config.model, pooling=config.pooling, pooling_params=config.pooling_params)
        pairs = read_sts(file)
        rho = sts_spearman(encoder, pairs)
    if as_json:
        emit_json({"file": str(file), "model": encoder.model_name, "pooling": config.pooling,
                    "pooling_params": config.pooling_params, "pairs": len(pairs.scores), "spearman": round(rho, 4)})
        return
    shown = f"{config.pooling} {json.dumps(config.pooling_params)}" if config.pooling_params else config.pooling
    say(f"{rho:.2f}  Spearman x 100 over {len(pairs.scores)} pairs ({shown})")
