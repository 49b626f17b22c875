"""``eval``, ``eval-sts`` and ``tune``: retrieval and sentence-similarity quality on benchmark sets."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from searchapp.cli.common import display_path, emit_json, errors, say
from searchapp.cli.options import (
    DeviceOpt,
    JsonOpt,
    MaxTokensOpt,
    ModelOpt,
    PoolingOpt,
    PoolingParamOpt,
    PrecisionOpt,
    fusion_options,
)
from searchapp.encode.device import usable
from searchapp.errors import SearchappError
from searchapp.evaluate.known_items import MISS_DEPTH
from searchapp.evaluate.metrics import METRICS
from searchapp.query.options import MODES
from searchapp.types import MAX_WHOLE

if TYPE_CHECKING:
    from searchapp.config import IndexConfig
    from searchapp.evaluate.diagnostics import Diagnosis, Evidence

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
    dataset: Annotated[Path, typer.Argument(
        help="BEIR-layout folder: corpus.jsonl, queries.jsonl, qrels/; with --questions, a folder of documents.")],
    split: Annotated[str, typer.Option(help="Qrels split: qrels/<split>.tsv.")] = "test",
    mode: Annotated[str, typer.Option(help=f"{', '.join(MODES)} or all.")] = "all",
    model: ModelOpt = None,
    pooling: PoolingOpt = None,
    pooling_param: PoolingParamOpt = None,
    max_tokens: MaxTokensOpt = None,
    precision: PrecisionOpt = None,
    run_file: Annotated[Path | None, typer.Option(help="Write a TREC run (last mode evaluated).")] = None,
    index: EvalIndexOpt = None,
    questions: Annotated[Path | None, typer.Option(
        help="Known-item questions about the folder DATASET, one a line: question<TAB>path|path (paths relative "
             "to it); scored by the rank of the first target document: success@1, success@5, MRR@10.")] = None,
    show_misses: Annotated[bool, typer.Option(
        "--show-misses", help="With --questions: list, per mode, the questions whose target was not first, and "
        "what was ranked above it.")] = False,
    diagnose: Annotated[bool, typer.Option(
        "--diagnose", help="With --questions: per question, each mode's rank of the target, whether hybrid ranks it "
        "below the better single mode, and both sides' evidence for the target's best passage in each mode and for "
        "hybrid's first document (matched terms with their IDF, BM25, cosine, fused contributions); printed for the "
        "questions some mode misses or hybrid disagrees on, all of them under per_question with --json.")] = False,
    device: DeviceOpt = "auto",
    as_json: JsonOpt = False,
    *,
    fusion: dict[str, Any],
) -> None:
    """Score lexical, dense and hybrid retrieval on a benchmark split: nDCG@10, MRR@10, Recall@100, MAP@100; or,
    with --questions, on known-item questions about a folder of documents."""
    from searchapp.eval_index import prepare
    from searchapp.evaluate.runner import modes_for, write_trec_run
    from searchapp.query.options import check, resolve_fusion

    with errors():
        base = _encoder_config(model, pooling, pooling_param, max_tokens, precision)
        device = usable(device)
        modes = modes_for(mode)
        for m in modes:
            check("mode", m)  # before any indexing work
    if questions is not None:
        _eval_questions(dataset, questions, base, modes, index, fusion, run_file, show_misses, as_json, device,
                        diagnose)
        return
    with errors():
        if show_misses or diagnose:
            flag = "--show-misses lists the misses" if show_misses else "--diagnose reads the questions"
            raise SearchappError(f"{flag} of --questions: give a questions file")
        prepared = prepare(dataset, split, base, k0=fusion["k0"], index_dir=index, progress=_progress,
                           device=device)
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


def _eval_questions(
    folder: Path,
    questions: Path,
    base: IndexConfig,
    modes: Sequence[str],
    index: str | None,
    fusion: dict[str, Any],
    run_file: Path | None,
    show_misses: bool,
    as_json: bool,
    device: str = "auto",
    diagnose: bool = False,
) -> None:
    """``eval FOLDER --questions FILE``: the known-item check of a folder of documents (docs/evaluation.md)."""
    from searchapp.cli.ingest_command import embedding_progress
    from searchapp.eval_index import diagnose_folder, prepare_folder
    from searchapp.evaluate.known_items import misses
    from searchapp.evaluate.runner import write_trec_run
    from searchapp.query.options import resolve_fusion

    with errors():
        with embedding_progress() as embedding:
            folder_check = prepare_folder(folder, questions, base, k0=fusion["k0"], index_dir=index, progress=_progress,
                                   embedding=embedding, device=device)
        prepared = folder_check.prepared
        settings = resolve_fusion(prepared.fusion, fusion)
        rankings = {m: prepared.run_for(m, settings) for m in modes}
        if run_file is not None:
            write_trec_run(run_file, rankings[modes[-1]], f"searchapp-{modes[-1]}")
        diagnoses = diagnose_folder(folder_check, settings) if diagnose else None
    for failed_path, reason in [*folder_check.summary.failures, *folder_check.summary.warnings]:
        say(f"warning: {display_path(failed_path)}: {reason}", err=True)
    results = {m: prepared.known_items(m, settings) for m in modes}
    missed = {m: misses(folder_check.items, rankings[m]) for m in modes}
    n = len(folder_check.items.questions)
    if as_json:
        out = {"folder": str(folder), "questions": n, "index": folder_check.index, "fusion": asdict(settings),
               "results": {m: {k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()}
                           for m, r in results.items()},
               "misses": {m: [miss.to_dict() for miss in found] for m, found in missed.items()}}
        if diagnoses is not None:
            out["per_question"] = [d.to_dict() for d in diagnoses]
        emit_json(out)
        return
    say(f"{folder}: {n} question{'s' if n != 1 else ''} ({questions})")
    say(f"{'mode':<10}{'first':>9}{'top 5':>9}{'MRR@10':>9}")
    for m, r in results.items():
        first, top5 = f"{r['hits@1']}/{n}", f"{r['hits@5']}/{n}"
        say(f"{m:<10}{first:>9}{top5:>9}{r['mrr@10']:>9.3f}")
    if diagnoses is not None:
        _say_diagnoses(diagnoses)
    if not show_misses:
        return
    for m, found in missed.items():
        say("")
        say(f"{m}: {len(found)} question{'s' if len(found) != 1 else ''} whose target was not first")
        for miss in found:
            q = miss.question
            where = f"rank {miss.rank}" if miss.rank is not None else f"not in the top {MISS_DEPTH}"
            say(f"  line {q.line}: {q.text}")
            say(f"    target {' | '.join(q.targets)} ({where}); first: {miss.above[0] if miss.above else 'nothing'}")


def _say_diagnoses(diagnoses: Sequence[Diagnosis]) -> None:
    """A block per question that some mode misses or hybrid disagrees on (docs/cli.md)."""
    shown = [d for d in diagnoses if d.worth_reading]
    say("")
    say(f"diagnosed: {len(shown)} of {len(diagnoses)} question{'s' if len(diagnoses) != 1 else ''} "
        "missed by some mode or ranked lower by hybrid than by the better single mode")
    for d in shown:
        q = d.question
        ranks = ", ".join(f"{m} {r if r is not None else '-'}" for m, r in d.ranks.items())
        say(f"  line {q.line}: {q.text}")
        say(f"    target {' | '.join(q.targets)}: {ranks}{'  (hybrid disagrees)' if d.hybrid_disagrees else ''}")
        weight = f"dense weight {d.dense_weight:.3f} " if d.dense_weight is not None else ""
        say(f"    {d.fusion}: {weight}({d.reason})")
        # A passage once, with the modes in which it is the target's best.
        chosen: dict[int, tuple[Evidence, list[str]]] = {}
        for m, e in d.target.items():
            if e is not None:
                chosen.setdefault(e.passage_id, (e, []))[1].append(m)
        shown_with = [(f"target ({', '.join(modes)})", e) for e, modes in chosen.values()]
        for label, e in [*shown_with, ("hybrid first", d.hybrid_first)]:
            if e is not None:
                for line in _evidence_lines(label, e):
                    say(f"    {line}")


def _evidence_lines(label: str, e: Evidence) -> list[str]:
    """One passage's evidence: where it is, its scores and the fused sum, and the terms it matched."""

    def num(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    fused = f"fused {num(e.fused)}"
    if e.dense_contribution is not None and e.lexical_contribution is not None:
        fused += (f" = dense {num(e.dense_contribution)} (normalised {num(e.dense_normalised)}) + lexical "
                  f"{num(e.lexical_contribution)} (normalised {num(e.lexical_normalised)})")
    terms = ", ".join(f"{t} {num(w)}" if w is not None else t for t, w in e.matched_terms) or "(none)"
    return [f"{label}: {e.document}" + (f" > {e.section}" if e.section else "") + f" (passage {e.passage_id})",
            f"  BM25 {num(e.bm25)}; cosine {num(e.cosine)}; {fused}",
            f"  matched terms (IDF): {terms}"]


def _dataset_split(item: str, default: str) -> tuple[Path, str]:
    """``PATH`` or ``PATH:SPLIT`` (the suffix is a split only when ``PATH:SPLIT`` is not itself a path)."""
    path = Path(item)
    if not path.exists() and ":" in item:
        head, _, split = item.rpartition(":")
        if split and "/" not in split:
            return Path(head), split
    return path, default


def _fusion_fields(fusion: Any) -> dict[str, Any]:
    out = asdict(fusion)
    return {"fusion": out.pop("method"), **out}


@fusion_options(only=("k0",))
def tune(
    datasets: Annotated[list[str], typer.Argument(
        help="BEIR-layout folders with labelled queries; PATH:SPLIT names a folder's split.", metavar="DATASET...")],
    split: Annotated[str, typer.Option(help="Qrels split to tune on (where DATASET names none).")] = "train",
    metric: Annotated[str, typer.Option(help=f"{', '.join(METRICS)}.")] = "ndcg@10",
    cross_validate: Annotated[bool, typer.Option(
        "--cross-validate", help="Choose without each held-out part and score it there: leave one collection out "
        "(several DATASETs) or --folds folds of one collection's queries.")] = False,
    folds: Annotated[
        int, typer.Option(min=2, max=MAX_WHOLE, help="Query folds for --cross-validate on one collection.")
    ] = 5,
    model: ModelOpt = None,
    pooling: PoolingOpt = None,
    pooling_param: PoolingParamOpt = None,
    precision: PrecisionOpt = None,
    write_config: Annotated[
        str | None, typer.Option(help="Store the best setting as this index's hybrid default (folder or URL).")
    ] = None,
    index: EvalIndexOpt = None,
    as_json: JsonOpt = False,
    *,
    fusion: dict[str, Any],
) -> None:
    """Search the hybrid fusion settings on labelled queries and print the best; with several collections the
    best is the one whose worst margin over each collection's better single retriever is largest."""
    from searchapp.eval_index import prepare
    from searchapp.evaluate.tune import cross_validate as run_cv
    from searchapp.evaluate.tune import tune as run_tune
    from searchapp.index import Index

    with errors():
        if metric not in METRICS:
            raise SearchappError(f"unknown metric '{metric}': use one of {', '.join(METRICS)}")
        if index is not None and len(datasets) > 1:
            raise SearchappError("--index names one collection's index: give one DATASET with it")
        base = _encoder_config(model, pooling, pooling_param, precision=precision)
        parts = {}
        for item in datasets:
            path, part_split = _dataset_split(item, split)
            name = f"{path.name} {part_split}"
            if name in parts:
                raise SearchappError(f"{item}: given twice")
            parts[name] = prepare(path, part_split, base, k0=fusion["k0"], index_dir=index, progress=_progress)
        if cross_validate:
            result = run_cv(parts, metric, folds)
        else:
            best = run_tune(parts if len(parts) > 1 else next(iter(parts.values())), metric)
            if write_config is not None:
                with Index(write_config) as target:
                    target.set_fusion(best.best)
    if cross_validate:
        rows = [{"held_out": f.held_out, "queries": f.queries, "chosen": _fusion_fields(f.chosen),
                 "value": round(f.value, 4), "lexical": round(f.lexical, 4), "dense": round(f.dense, 4),
                 "default": round(f.default, 4),
                 "margin": {"mean": round(f.margin[0], 4), "ci95": [round(f.margin[1], 4), round(f.margin[2], 4)]}}
                for f in result]
        worst = min(rows, key=lambda r: r["margin"]["mean"])
        protocol = "leave-one-collection-out" if len(parts) > 1 else f"{len(rows)}-fold over queries"
        if as_json:
            emit_json({"protocol": protocol, "metric": metric, "datasets": list(parts), "folds": rows,
                       "worst": worst["held_out"]})
            return
        say(f"{protocol}, {metric}; margin = chosen - better single retriever on the held-out queries (95% CI)")
        say(f"{'held out':<22}{'queries':>8}{'lexical':>9}{'dense':>8}{'default':>9}{'chosen':>8}  "
            f"{'margin':<28}setting chosen on the rest")
        for r, f in zip(rows, result, strict=True):
            m = r["margin"]
            ci = f"{m['mean']:+.4f} [{m['ci95'][0]:+.4f}, {m['ci95'][1]:+.4f}]"
            say(f"{r['held_out']:<22}{r['queries']:>8}{r['lexical']:>9.4f}{r['dense']:>8.4f}{r['default']:>9.4f}"
                f"{r['value']:>8.4f}  {ci:<28}{f.chosen.describe()}")
        say(f"worst: {worst['held_out']} ({worst['margin']['mean']:+.4f})")
        return
    total = sum(p.judged for p in parts.values())
    out = {**_fusion_fields(best.best), "metric": metric, "value": round(best.value, 4), "queries": total,
           "datasets": list(parts), "recommended": best.rung, "reason": best.reason,
           "tuned": _fusion_fields(best.tuned or best.best),
           "held_out": [{"part": f.held_out, "queries": f.queries, "margin": round(f.margin[0], 4)}
                        for f in best.checked]}
    if len(parts) == 1:  # the single-collection form keeps its documented keys
        name, part_split = list(parts)[0].rsplit(" ", 1)
        del out["datasets"]
        out.update({"dataset": name, "split": part_split})
    if as_json:
        emit_json(out)
        return
    shown = ", ".join(parts)
    fields = ", ".join(f"{k}={v}" for k, v in _fusion_fields(best.best).items())
    say(f"best on {shown} ({total} queries): {fields}, metric={metric}, value={best.value:.4f}")
    say(f"recommended: {best.rung} ({best.reason})")
    if write_config is not None:
        say(f"written to {write_config}")


def eval_sts(
    file: Annotated[Path, typer.Argument(help="STS-B format file (tab-separated; score col 5, sentences 6-7).")],
    model: ModelOpt = None,
    pooling: PoolingOpt = None,
    pooling_param: PoolingParamOpt = None,
    precision: PrecisionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Spearman x 100 between gold similarity and the cosine of the two sentences' embeddings (embedded as an
    index of these settings embeds its passages)."""
    from searchapp.encode.spec import EncoderSpec
    from searchapp.evaluate.sts import read_sts, sts_spearman

    with errors():
        config = _encoder_config(model, pooling, pooling_param, precision=precision)
        spec = EncoderSpec(model=config.model, pooling=config.pooling, pooling_params=config.pooling_params,
                           precision=config.precision)
        pairs = read_sts(file)
        rho = sts_spearman(spec.build(), pairs)
    if as_json:
        emit_json({"file": str(file), "model": config.model, "pooling": config.pooling,
                   "pooling_params": config.pooling_params, "precision": spec.embeds_in, "pairs": len(pairs.scores),
                   "spearman": round(rho, 4)})
        return
    shown = f"{config.pooling} {json.dumps(config.pooling_params)}" if config.pooling_params else config.pooling
    say(f"{rho:.2f}  Spearman x 100 over {len(pairs.scores)} pairs ({shown})")
