"""Command line: each command parses, makes one library call, renders. Errors become one line and exit 1."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from searchapp.errors import SearchappError

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Semantic search over a folder of documents: ingest it, then query it.",
)

IndexOpt = Annotated[
    Path,
    typer.Option("--index", "-i", envvar="SEARCHAPP_INDEX", help="Index folder.", show_default=True),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout (see docs/cli.md).")]
DEFAULT_INDEX = Path(".searchapp")


@contextmanager
def _errors() -> Iterator[None]:
    """Expected failures end as one line on stderr and exit status 1, never a traceback."""
    try:
        yield
    except SearchappError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


def _emit_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, ensure_ascii=False, indent=2))


def _display_path(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return path


@app.command()
def ingest(
    path: Annotated[Path, typer.Argument(help="File or folder to index (recursively).")],
    index: IndexOpt = DEFAULT_INDEX,
    include: Annotated[list[str] | None, typer.Option(help="Glob of files to include (repeatable).")] = None,
    exclude: Annotated[list[str] | None, typer.Option(help="Glob of files to exclude (repeatable).")] = None,
    model: Annotated[str | None, typer.Option(help="Model name or local model folder (new index).")] = None,
    pooling: Annotated[
        str | None, typer.Option(help="Pooling strategy (new index): mean, cls, layers, sbert-wk.")
    ] = None,
    pooling_param: Annotated[
        list[str] | None,
        typer.Option(help="Pooling parameter KEY=VALUE, e.g. layer_start=4 or layers=-2,-1 (repeatable).")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option(help="Passage budget in word pieces, special tokens included (new index).")
    ] = None,
    overlap: Annotated[int | None, typer.Option(help="Word pieces repeated between passages (new index).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add new files, replace changed ones and remove deleted ones; prints a summary."""
    from searchapp.config import parse_params
    from searchapp.index import Index

    with _errors():
        if not path.exists():  # before creating an index for nothing
            raise SearchappError(f"{path}: no such file or folder")
        params = parse_params(pooling_param) if pooling_param else None
        ix = Index.open_or_create(
            index, model=model, pooling=pooling, pooling_params=params, max_tokens=max_tokens, overlap=overlap
        )
        with ix, _progress(quiet=False) as progress:
            summary = ix.ingest(path, include=include or (), exclude=exclude or (), progress=progress)
    for failed_path, reason in summary.failures:
        typer.echo(f"warning: {_display_path(failed_path)}: {reason}", err=True)
    if as_json:
        _emit_json(summary.to_dict())
    else:
        typer.echo(
            f"added {summary.added}, updated {summary.updated}, unchanged {summary.unchanged}, "
            f"removed {summary.removed}, failed {summary.failed}; "
            f"{summary.passages_embedded} passages embedded in {summary.seconds:.1f}s"
        )
    seen = summary.added + summary.updated + summary.unchanged + summary.failed
    if summary.failed and summary.failed == seen:
        typer.echo("error: no file could be ingested", err=True)
        raise typer.Exit(1)


@contextmanager
def _progress(quiet: bool) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr, created on the first callback (when the number of files is known)."""
    import click

    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if quiet:
            return
        if "bar" not in state:
            state["bar"] = click.progressbar(length=total, label="ingesting", file=sys.stderr)
            state["bar"].__enter__()
        state["bar"].update(done - state["bar"].pos)

    try:
        yield update
    finally:
        if "bar" in state:
            state["bar"].__exit__(None, None, None)


@app.command()
def query(
    text: Annotated[str, typer.Argument(help="The question or keywords.")],
    index: IndexOpt = DEFAULT_INDEX,
    k: Annotated[int, typer.Option("--k", "-k", help="Number of hits.")] = 10,
    mode: Annotated[str, typer.Option(help="hybrid, dense or lexical.")] = "hybrid",
    fusion: Annotated[str | None, typer.Option(help="Hybrid fusion: adaptive, convex, rrf (index default).")] = None,
    norm: Annotated[
        str | None, typer.Option(help="Score normalisation: theoretical, minmax, zscore (index default).")
    ] = None,
    alpha: Annotated[float | None, typer.Option(help="Hybrid weight of the dense side (index default).")] = None,
    rrf_k: Annotated[int | None, typer.Option(help="RRF constant (index default, 60).")] = None,
    k0: Annotated[int | None, typer.Option(help="Hybrid candidates taken from each side (index default).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Rank passages for a question."""
    from searchapp.index import Index

    with _errors(), Index(index) as ix:
        hits = ix.search(text, k=k, mode=mode, method=fusion, norm=norm, alpha=alpha, rrf_k=rrf_k, k0=k0)
        if not hits and ix.meta.counts()[1] == 0:
            raise SearchappError(f"the index at {index} is empty: add files with `searchapp ingest FOLDER`")
    if as_json:
        _emit_json({"query": text, "mode": mode, "hits": [h.to_dict() for h in hits]})
        return
    if not hits:
        typer.echo("no results")
        return
    for h in hits:
        snippet = " ".join(h.text.split())
        snippet = snippet[:157] + "..." if len(snippet) > 160 else snippet
        typer.echo(f"{h.rank:>3}  {h.score:.3f}  {_display_path(h.path)}")
        typer.echo(f"     {snippet}")


@app.command()
def status(index: IndexOpt = DEFAULT_INDEX, as_json: JsonOpt = False) -> None:
    """Documents, passages, encoder and size of an index."""
    from searchapp.index import Index

    with _errors(), Index(index) as ix:
        stats = ix.stats()
    if as_json:
        _emit_json(stats.to_dict())
        return
    for key, value in stats.to_dict().items():
        typer.echo(f"{key:>15}: {value}")


def main() -> None:  # pragma: no cover - entry point for `python -m searchapp`
    app()


@app.command("eval-sts")
def eval_sts(
    file: Annotated[Path, typer.Argument(help="STS-B format file (tab-separated; score col 5, sentences 6-7).")],
    model: Annotated[str, typer.Option(help="Model name or local model folder.")] = "all-MiniLM-L6-v2",
    pooling: Annotated[str, typer.Option(help="Pooling strategy: mean, cls, layers, sbert-wk.")] = "mean",
    pooling_param: Annotated[
        list[str] | None, typer.Option(help="Pooling parameter KEY=VALUE (repeatable).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Spearman x 100 between gold similarity and the cosine of the two sentences' embeddings."""
    from searchapp.config import parse_params
    from searchapp.encode.encoder import Encoder
    from searchapp.evaluate.sts import read_sts, sts_spearman

    with _errors():
        params = parse_params(pooling_param or [])
        encoder = Encoder(model=model, pooling=pooling, pooling_params=params)
        pairs = read_sts(file)
        rho = sts_spearman(encoder, pairs)
    if as_json:
        _emit_json({"file": str(file), "model": encoder.model_name, "pooling": pooling, "pooling_params": params,
                    "pairs": len(pairs.scores), "spearman": round(rho, 4)})
    else:
        shown = f"{pooling} {json.dumps(params)}" if params else pooling
        typer.echo(f"{rho:.2f}  Spearman x 100 over {len(pairs.scores)} pairs ({shown})")


def _fusion_overrides(fusion: str | None, norm: str | None, alpha: float | None, rrf_k: int | None,
                      k0: int | None) -> dict[str, Any]:
    return {k: v for k, v in {"method": fusion, "norm": norm, "alpha": alpha, "rrf_k": rrf_k, "k0": k0}.items()
            if v is not None}


@app.command("eval")
def eval_cmd(
    dataset: Annotated[Path, typer.Argument(help="BEIR-layout folder: corpus.jsonl, queries.jsonl, qrels/.")],
    split: Annotated[str, typer.Option(help="Qrels split: qrels/<split>.tsv.")] = "test",
    mode: Annotated[str, typer.Option(help="lexical, dense, hybrid or all.")] = "all",
    model: Annotated[str | None, typer.Option(help="Model (default all-MiniLM-L6-v2).")] = None,
    pooling: Annotated[str | None, typer.Option(help="Pooling strategy (default mean).")] = None,
    pooling_param: Annotated[list[str] | None, typer.Option(help="Pooling parameter KEY=VALUE.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Passage budget in word pieces.")] = None,
    fusion: Annotated[str | None, typer.Option(help="Hybrid fusion: adaptive, convex, rrf.")] = None,
    norm: Annotated[str | None, typer.Option(help="Normalisation: theoretical, minmax, zscore.")] = None,
    alpha: Annotated[float | None, typer.Option(help="Convex weight of the dense side.")] = None,
    rrf_k: Annotated[int | None, typer.Option(help="RRF constant.")] = None,
    k0: Annotated[int | None, typer.Option(help="Hybrid candidates per side.")] = None,
    alpha_question: Annotated[float | None, typer.Option(help="Adaptive: dense weight for questions.")] = None,
    alpha_statement: Annotated[float | None, typer.Option(help="Adaptive: dense weight for other queries.")] = None,
    run_file: Annotated[Path | None, typer.Option(help="Write a TREC run (last mode evaluated).")] = None,
    index: Annotated[Path | None, typer.Option("--index", "-i", help="Index folder (default: a cache).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Score lexical, dense and hybrid retrieval on a benchmark split: nDCG@10, MRR@10, Recall@100, MAP@100."""
    from dataclasses import asdict, replace

    from searchapp.config import IndexConfig, parse_params
    from searchapp.evaluate.runner import modes_for, prepare, write_trec_run

    with _errors():
        given: dict[str, Any] = {"model": model, "pooling": pooling, "max_tokens": max_tokens,
                                 "pooling_params": parse_params(pooling_param or []) or None}
        base = IndexConfig(**{k: v for k, v in given.items() if v is not None})
        modes = modes_for(mode)
        for m in modes:
            check_mode_cli(m)
        prepared = prepare(dataset, split, base, k0=k0, index_dir=index,
                           progress=lambda msg: typer.echo(msg, err=True))
        overrides = _fusion_overrides(fusion, norm, alpha, rrf_k, k0)
        overrides.update({k: v for k, v in {"alpha_question": alpha_question,
                                             "alpha_statement": alpha_statement}.items() if v is not None})
        settings = replace(prepared.index.config.fusion_settings, **overrides)
        results = {m: prepared.score(m, settings) for m in modes}
        if run_file is not None:
            write_trec_run(run_file, prepared.run_for(modes[-1], settings), f"searchapp-{modes[-1]}")
        prepared.index.close()
    judged = prepared.judged
    skipped = len(prepared.data.qrels) - judged
    out = {"dataset": dataset.name, "split": split, "queries": judged, "skipped": skipped,
           "fusion": asdict(settings), "results": results}
    if as_json:
        _emit_json(out)
        return
    typer.echo(f"{dataset.name} {split}: {out['queries']} queries ({skipped} skipped: no relevant document)")
    names = list(next(iter(results.values())))
    typer.echo(f"{'mode':<10}" + "".join(f"{n:>12}" for n in names))
    for m, metrics in results.items():
        typer.echo(f"{m:<10}" + "".join(f"{metrics[n]:>12.4f}" for n in names))


def check_mode_cli(mode: str) -> None:
    """Reject an unknown mode before any indexing work."""
    from searchapp.config import check_mode

    check_mode(mode)


@app.command()
def tune(
    dataset: Annotated[Path, typer.Argument(help="BEIR-layout folder with labelled queries.")],
    split: Annotated[str, typer.Option(help="Qrels split to tune on.")] = "train",
    metric: Annotated[str, typer.Option(help="ndcg@10, mrr@10, recall@100 or map@100.")] = "ndcg@10",
    model: Annotated[str | None, typer.Option(help="Model (default all-MiniLM-L6-v2).")] = None,
    pooling: Annotated[str | None, typer.Option(help="Pooling strategy (default mean).")] = None,
    pooling_param: Annotated[list[str] | None, typer.Option(help="Pooling parameter KEY=VALUE.")] = None,
    k0: Annotated[int | None, typer.Option(help="Hybrid candidates per side.")] = None,
    write_config: Annotated[
        Path | None, typer.Option(help="Store the best setting as this index's hybrid default.")
    ] = None,
    index: Annotated[Path | None, typer.Option("--index", "-i", help="Index folder (default: a cache).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Search the hybrid fusion settings on labelled queries and print the best."""
    from dataclasses import asdict

    from searchapp.config import IndexConfig, parse_params
    from searchapp.evaluate.metrics import METRICS
    from searchapp.evaluate.runner import prepare
    from searchapp.evaluate.tune import tune as run_tune
    from searchapp.index import Index

    with _errors():
        if metric not in METRICS:
            raise SearchappError(f"unknown metric '{metric}': use one of {', '.join(METRICS)}")
        given: dict[str, Any] = {"model": model, "pooling": pooling,
                                 "pooling_params": parse_params(pooling_param or []) or None}
        base = IndexConfig(**{k: v for k, v in given.items() if v is not None})
        prepared = prepare(dataset, split, base, k0=k0, index_dir=index,
                           progress=lambda msg: typer.echo(msg, err=True))
        result = run_tune(prepared, metric)
        prepared.index.close()
        if write_config is not None:
            with Index(write_config) as target:
                target.set_fusion(result.best)
    best = asdict(result.best)
    out = {"fusion": best.pop("method"), **best, "metric": metric, "value": round(result.value, 4),
           "queries": prepared.judged, "dataset": dataset.name, "split": split}
    if as_json:
        _emit_json(out)
        return
    typer.echo(f"best on {dataset.name} {split} ({prepared.judged} queries): "
               + ", ".join(f"{k}={v}" for k, v in out.items() if k not in ("dataset", "split", "queries")))
    if write_config is not None:
        typer.echo(f"written to {write_config}")
