"""The commands of everyday use: ``ingest``, ``query``, ``status``, ``remove``, ``documents`` and ``export``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from enum import Enum
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Annotated, Any

import typer

from searchapp.clean import clean_map
from searchapp.cli.common import (
    DEFAULT_INDEX,
    BatchSizeOpt,
    DeviceOpt,
    ExcludeOpt,
    FollowLinksOpt,
    IncludeOpt,
    IndexOpt,
    JsonOpt,
    MaxFileMbOpt,
    MaxTokensOpt,
    ModelOpt,
    NoIgnoreOpt,
    OverlapOpt,
    PoolingOpt,
    PoolingParamOpt,
    PrecisionOpt,
    ThreadsOpt,
    WaitOpt,
    display_path,
    emit_json,
    errors,
    fusion_options,
    human_size,
    say,
    say_styled,
    search_options,
    shown_key,
)
from searchapp.cli.progress import IngestProgress
from searchapp.errors import SearchappError
from searchapp.filters import Filter
from searchapp.ingest.sections import SEPARATOR, shown_with_title
from searchapp.keyvalue import parse_choices
from searchapp.setting import MAX_THREADS
from searchapp.types import Explanation, Hit, Snippet

if TYPE_CHECKING:
    from searchapp.index import Index
    from searchapp.ingest.pipeline import IngestSummary


def register(app: typer.Typer) -> None:
    """Add ``ingest``, ``query`` and ``status`` to ``app``."""
    app.command()(ingest)
    app.command()(query)
    app.command()(status)
    app.command()(remove)
    app.command()(documents)
    app.command()(collections)
    app.command()(export)


def ingest(
    path: Annotated[Path, typer.Argument(help="File or folder to index (recursively).")],
    index: IndexOpt = DEFAULT_INDEX,
    include: IncludeOpt = None,
    exclude: ExcludeOpt = None,
    model: ModelOpt = None,
    pooling: PoolingOpt = None,
    pooling_param: PoolingParamOpt = None,
    max_tokens: MaxTokensOpt = None,
    overlap: OverlapOpt = None,
    precision: PrecisionOpt = None,
    batch_size: BatchSizeOpt = 32,
    max_file_mb: MaxFileMbOpt = 100.0,
    follow_links: FollowLinksOpt = False,
    no_ignore: NoIgnoreOpt = False,
    workers: Annotated[
        str, typer.Option(help="local, or ray / ray:ADDRESS: load, split and embed on a Ray cluster (a local one, "
                          "or the one at ADDRESS; needs the ray extra; docs/distributed.md).")
    ] = "local",
    actors: Annotated[int, typer.Option(min=1, max=MAX_THREADS, help="Encoder actors, with --workers ray.")] = 1,
    gpus_per_actor: Annotated[float, typer.Option(
        min=0, max=64, help="GPUs each encoder actor reserves through Ray and embeds on, with --workers ray (0: CPUs).")
    ] = 0,
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    force: Annotated[
        bool, typer.Option("--force", help="Read every file again, even if its size and mtime are unchanged.")
    ] = False,
    wait: WaitOpt = 0.0,
    collection: Annotated[
        str | None, typer.Option(help="Put the documents of PATH in this named collection (query --collection "
                                 "finds them; a document is in one collection).")
    ] = None,
    description: Annotated[
        str | None, typer.Option(help="What the collection holds and when to search it (with --collection; "
                                 "`searchapp collections` and the MCP tool list_collections show it).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add new files, replace changed ones and remove deleted ones; prints a summary."""
    from searchapp.ingest.options import IngestOptions

    with errors():
        # Checked before an index is created for nothing: the path, and the workers (a bad value, or nothing at an
        # address).
        options = IngestOptions(path, include=include or (), exclude=exclude or (), max_file_mb=max_file_mb,
                                follow_links=follow_links, ignore_rules=not no_ignore, force=force,
                                workers=workers, actors=actors, gpus_per_actor=gpus_per_actor,
                                collection=collection, description=description)
        if options.ray is not None:
            from searchapp.ingest.distributed import connect

            # The cluster reached and its CPUs and GPUs checked before the index is opened, which may create it
            # with settings a re-run would have to match; the ingest then uses this connection.
            connect(options.ray)
        ix = open_for_ingest(index, model, pooling, pooling_param, max_tokens, overlap, precision, batch_size,
                             threads, wait, device)
        with ix, embedding_progress() as progress:
            summary = ix.ingest(options, progress=progress)
    warn_failures(summary)
    if as_json:
        emit_json(summary.to_dict())
    else:
        say(summary_line(summary))
    seen = summary.added + summary.updated + summary.unchanged + summary.failed
    if summary.failed and summary.failed == seen:
        say("error: no file could be ingested", err=True)
        raise typer.Exit(1)


def open_for_ingest(
    index: str, model: str | None, pooling: str | None, pooling_param: list[str] | None, max_tokens: int | None,
    overlap: int | None, precision: str | None, batch_size: int, threads: int | None, wait: float,
    device: str = "auto",
) -> Index:
    """The index an ingest (or a watch) writes to, opened or created with the encoder and splitter options, embedding
    on ``device``."""
    from searchapp.index import Index
    from searchapp.keyvalue import parse_params

    params = parse_params(pooling_param) if pooling_param else None
    return Index.open_or_create(
        index, model=model, pooling=pooling, pooling_params=params, max_tokens=max_tokens, overlap=overlap,
        precision=precision, batch_size=batch_size, threads=threads, lock_wait=wait, device=device,
    )


def warn_failures(summary: IngestSummary) -> None:
    """A warning line on stderr for each file an ingest skipped with a reason, or read despite a problem."""
    for failed_path, reason in [*summary.failures, *summary.warnings]:
        say(f"warning: {display_path(failed_path)}: {reason}", err=True)


def summary_line(summary: IngestSummary) -> str:
    """An ingest's summary for a human, on one line."""
    skipped = ", ".join(f"{n} {_SKIP_WORDS[r]}" for r, n in summary.to_dict()["skipped"].items() if n)
    return (
        f"added {summary.added}, updated {summary.updated}, unchanged {summary.unchanged}, "
        f"removed {summary.removed}, failed {summary.failed}; "
        f"{summary.passages_embedded} passages embedded in {summary.seconds:.1f}s"
        + (f"; skipped {skipped}" if skipped else "")
    )


# The summary's words for each reason a file was skipped (ingest.pipeline.SKIP_REASONS).
_SKIP_WORDS = {"hidden": "hidden", "ignored": "ignored", "unsupported": "of unsupported type",
               "excluded": "excluded", "empty": "empty", "too_large": "too large"}


def embedding_progress() -> IngestProgress:
    """The ingest's reporter on stderr (cli/progress.py): its stages, then passages embedded of the total with
    the rate and the time left; a line redrawn on a terminal, lines at least every few seconds in a log."""
    return IngestProgress()


class TextForm(str, Enum):
    """Which text of a passage the query table shows (the JSON gives both, ``text`` and ``clean_text``)."""

    exact = "exact"
    clean = "clean"


@fusion_options()
@search_options(own={"filters": ("filter_", "path_prefix", "path_glob", "collection")}, short={"k": "-k"})
def query(
    text: Annotated[str | None, typer.Argument(help="The question or keywords.")] = None,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Run every line of this file as a query (batched).")
    ] = None,
    index: IndexOpt = DEFAULT_INDEX,
    filter_: Annotated[
        list[str] | None,
        typer.Option("--filter", help="Metadata KEY=VALUE the documents must have (repeatable; a repeated KEY "
                     "means any of its values; VALUE is read as JSON when it parses, else as a string)."),
    ] = None,
    path_prefix: Annotated[
        str | None, typer.Option(help="Only documents under this path (a folder or file; or a text id prefix).")
    ] = None,
    path_glob: Annotated[str | None, typer.Option(help="Only documents whose full path matches this glob.")] = None,
    collection: Annotated[
        str | None, typer.Option(help="Only documents of this named collection (ingest --collection).")
    ] = None,
    text_form: Annotated[
        TextForm, typer.Option("--text", help="The passage text the table shows: exact (as stored, markup blanked "
                               "to spaces) or clean (blanks collapsed, include directives dropped, as --json's "
                               "clean_text).")
    ] = TextForm.exact,
    as_json: JsonOpt = False,
    *,
    options: dict[str, Any],
    fusion: dict[str, Any],
) -> None:
    """Rank passages for a question (or for every line of --file, encoded in batches)."""
    from searchapp.index import Index
    from searchapp.store.locate import display

    with errors():
        queries = _queries(text, file)
        filters = _filters(filter_ or [], path_prefix, path_glob, collection)
        with Index(index) as ix:
            results = ix.search_batch(queries, filters=filters, **options, **fusion)
            if not any(results) and ix.is_empty():
                raise SearchappError(
                    f"the index at {display(index)} is empty: add files with `searchapp ingest FOLDER`"
                )
    for q, hits in zip(queries, results, strict=True):
        _render(q, options["mode"], hits, as_json, header=file is not None, clean=text_form is TextForm.clean)


def _filters(pairs: list[str], path_prefix: str | None, path_glob: str | None,
             collection: str | None = None) -> Filter | None:
    if path_prefix is not None and os.path.exists(path_prefix):
        # Files are stored by absolute path; an existing path given on the command line means that file or folder.
        path_prefix = os.path.abspath(path_prefix)
    flt = Filter(parse_choices(pairs, "--filter"), path_prefix=path_prefix, path_glob=path_glob,
                 collection=collection)
    return None if flt.empty else flt


def _queries(text: str | None, file: Path | None) -> list[str]:
    if (text is None) == (file is None):
        # A usage error, as a missing argument is (exit 2).
        raise typer.BadParameter("give a query TEXT or --file FILE, not both or neither")
    if file is None:
        return [text or ""]
    try:
        lines = [line.strip() for line in file.read_text(encoding="utf-8").splitlines()]
    except (OSError, UnicodeDecodeError) as exc:
        raise SearchappError(f"{file}: cannot read queries: {exc}") from exc
    queries = [line for line in lines if line]
    if not queries:
        raise SearchappError(f"{file}: no query in it (one a line)")
    return queries


def _render(query: str, mode: str, hits: list[Any], as_json: bool, header: bool, clean: bool = False) -> None:
    """One query's hits: a JSON document (one line each with --file), or a readable table."""
    if as_json:
        doc = {"query": query, "mode": mode, "hits": [h.to_dict() for h in hits]}
        typer.echo(json.dumps(doc, ensure_ascii=False) if header else json.dumps(doc, ensure_ascii=False, indent=2))
        return
    if header:
        say(f"# {query}")
    if not hits:
        say("no results")
        return
    say(f"  #  score  source  path  (score: {_SCORE_MEANING[mode]}; higher ranks first)")
    for h in hits:
        more = f"  (+{len(h.other_passages)} more passages)" if h.other_passages else ""
        line = f":{h.line}" if h.line is not None else ""
        say(f"{h.rank:>3}  {h.score:.3f}  {shown_key(h.path, h.source)}{line}  passage {h.passage_id}{more}")
        if where := _where(h):
            say(f"     {where}")
        say_styled(_snippet_pieces(h, clean), indent=5)
        if h.explain is not None:
            for line in _explain_lines(h.explain, h.scores):
                say(f"     | {line}")


# What the table's score is, by mode (the JSON's `score`, docs/cli.md).
_SCORE_MEANING = {"hybrid": "fused dense and lexical scores, relative to this query's candidates",
                  "dense": "cosine similarity to the query", "lexical": "BM25"}


def _where(hit: Hit) -> str:
    """Where the passage stands: its document's title and the section path, as one line (empty when the title is
    only the file's name and there is no section)."""
    named = hit.title and hit.title != hit.path and hit.title != PurePath(hit.path).stem
    place = shown_with_title(hit.title, hit.section)  # the title, then the section without a first heading that
    if named or not hit.title:  # repeats it (a file's title at the root of its sections, say)
        return place
    return place[len(hit.title):].removeprefix(SEPARATOR)


def _explain_lines(e: Explanation, scores: Mapping[str, float]) -> list[str]:
    """An explanation for a human: the scores, the weighting, the matched terms, and the scores of the stages
    after the two sides (``scores``: every stage's, query/ranking.py), a line each."""

    def side(name: str, raw: float | None, normalised: float | None) -> str:
        if raw is None:
            return f"{name} -"
        return f"{name} {raw:.3f}" + (f" (normalised {normalised:.3f})" if normalised is not None else "")

    weight = f"; dense weight {e.dense_weight:.3f}" if e.dense_weight is not None else ""
    return [
        f"{side('cosine', e.dense, e.dense_normalised)}; {side('BM25', e.lexical, e.lexical_normalised)}{weight}",
        f"{e.fusion}: {e.reason}",
        f"matched terms: {', '.join(e.matched_terms) or '(none)'}",
        *[f"{stage} {score:.3f}" for stage, score in scores.items() if stage not in ("dense", "lexical")],
    ]


def _snippet_pieces(hit: Hit, clean: bool = False) -> list[tuple[str, bool]]:
    """The hit's snippet as (text, is a match) pieces, with "..." where the passage goes on; ``clean``: the
    characters of the clean text that come from the snippet's window (``clean.py``)."""
    sn = hit.snippet or Snippet(hit.start, min(hit.end, hit.start + 160))

    def cut(s: int, e: int) -> str:
        return hit.text[s - hit.start : e - hit.start]

    pieces: list[tuple[str, bool]] = [("...", False)] if sn.start > hit.start else []
    if clean:
        pieces += _clean_pieces(hit, sn)
    else:
        at = sn.start
        for s, e in sn.highlights:
            pieces += [(cut(at, s), False), (cut(s, e), True)]
            at = e
        pieces.append((cut(at, sn.end), False))
    if sn.end < hit.end:
        pieces.append(("...", False))
    first = next((i for i, (text, _) in enumerate(pieces) if text.strip()), None)
    if first is not None:  # no white space before the first word
        pieces[first] = (pieces[first][0].lstrip(), pieces[first][1])
    return pieces


def _clean_pieces(hit: Hit, sn: Snippet) -> list[tuple[str, bool]]:
    """The clean text's characters whose origin lies in the snippet's window, as (text, is a match) pieces."""
    text, origins = clean_map(hit.text)
    marks = [(s - hit.start, e - hit.start) for s, e in sn.highlights]
    pieces: list[tuple[str, bool]] = []
    mark = 0
    for ch, origin in zip(text, origins, strict=True):
        if not sn.start - hit.start <= origin < sn.end - hit.start:
            continue
        while mark < len(marks) and marks[mark][1] <= origin:
            mark += 1
        lit = mark < len(marks) and marks[mark][0] <= origin
        if pieces and pieces[-1][1] == lit:
            pieces[-1] = (pieces[-1][0] + ch, lit)
        else:
            pieces.append((ch, lit))
    return pieces


def status(index: IndexOpt = DEFAULT_INDEX, as_json: JsonOpt = False) -> None:
    """Documents, passages, encoder and size of an index."""
    from searchapp.encode.graph_cache import usage
    from searchapp.index import Index
    from searchapp.paths import cache_root

    with errors(), Index(index) as ix:
        stats = ix.stats()
    # This machine's cache (exported graphs, unpacked models, evaluation indexes), not the index's: the CLI's alone.
    found = {"cache_dir": str(cache_root()), "cache_bytes": usage()["total"]}
    if as_json:
        emit_json({**stats.to_dict(), **found})
        return
    for key, value in {**stats.to_dict(), **found}.items():
        if key == "warnings":
            for warning in value:  # type: ignore[attr-defined]
                say(f"{'warning':>15}: {warning}")
            continue
        sized = key in ("disk_bytes", "cache_bytes") and isinstance(value, int)
        say(f"{key:>15}: {human_size(int(value)) if sized else value}")


def remove(
    targets: Annotated[list[str], typer.Argument(help="Files, folders (even if gone from disk) or text ids.")],
    index: IndexOpt = DEFAULT_INDEX,
    wait: WaitOpt = 0.0,
    as_json: JsonOpt = False,
) -> None:
    """Remove documents: a file, everything indexed under a folder (moved, deleted or reached through a link
    included), or texts by id."""
    from searchapp.index import Index

    with errors(), Index(index, lock_wait=wait) as ix:
        removed = ix.remove_targets(targets)
    if as_json:
        emit_json({"removed": len(removed), "documents": removed})
        return
    for key in removed:
        say(f"removed {display_path(key) if os.path.isabs(key) else key}")
    say(f"removed {len(removed)}")


def documents(index: IndexOpt = DEFAULT_INDEX, as_json: JsonOpt = False) -> None:
    """List the indexed documents: path (or text id), source, passages, size, modification time when indexed and
    when it was indexed."""
    import datetime

    from searchapp.index import Index

    with errors(), Index(index) as ix:
        docs = ix.documents()
    if as_json:
        emit_json({"documents": [d.to_dict() for d in docs]})
        return
    say(f"{'passages':>8}  {'size':>10}  {'modified':>16}  {'indexed':>16}  {'source':<4}  path")
    for d in docs:
        when = datetime.datetime.fromtimestamp(d.mtime).strftime("%Y-%m-%d %H:%M") if d.mtime else "-"
        indexed = (datetime.datetime.fromtimestamp(d.indexed_at).strftime("%Y-%m-%d %H:%M")
                   if d.indexed_at is not None else "-")
        say(f"{d.passages:>8}  {human_size(d.size):>10}  {when:>16}  {indexed:>16}  {shown_key(d.path, d.source)}")


def collections(index: IndexOpt = DEFAULT_INDEX, as_json: JsonOpt = False) -> None:
    """List the named collections (ingest --collection): name, documents, passages and description."""
    from searchapp.index import Index

    with errors(), Index(index) as ix:
        found = ix.collections()
    if as_json:
        emit_json({"collections": [c.to_dict() for c in found]})
        return
    if not found:
        say("no collections (ingest a folder with --collection NAME to name one)")
        return
    say(f"{'documents':>9}  {'passages':>8}  name  description")
    for c in found:
        say(f"{c.documents:>9}  {c.passages:>8}  {c.name}  {c.description}")


def export(
    index: IndexOpt = DEFAULT_INDEX,
    vectors: Annotated[bool, typer.Option("--vectors", help="Add each passage's stored vector.")] = False,
) -> None:
    """Write every document, then every passage, as JSON lines on stdout (streamed; docs/cli.md)."""
    from searchapp.index import Index

    with errors(), Index(index) as ix:
        # A reader that left (`| head`), a full disk or no stdout: common.run's one rule, as for every command.
        for row in ix.export(vectors=vectors):
            sys.stdout.write(json.dumps(row.to_dict(), ensure_ascii=False) + "\n")
