"""The commands that read or change an index as a whole: ``status``, ``remove``, ``documents``, ``collections``,
``export`` and ``lexical-engine``."""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated

import typer

from searchapp.cli.common import EXIT_NO_MATCH, display_path, emit_json, errors, human_size, say, shown_key
from searchapp.cli.options import DEFAULT_INDEX, IndexOpt, JsonOpt, WaitOpt


def register(app: typer.Typer) -> None:
    """Add ``status``, ``remove``, ``documents``, ``collections``, ``export`` and ``lexical-engine`` to ``app``."""
    app.command()(status)
    app.command()(remove)
    app.command()(documents)
    app.command()(collections)
    app.command()(export)
    app.command("lexical-engine")(lexical_engine)


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
        if key == "collections":
            value = ", ".join(value) or "-"  # type: ignore[arg-type]
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
    else:
        for key in removed:
            say(f"removed {display_path(key) if os.path.isabs(key) else key}")
        say(f"removed {len(removed)}")
    if not removed:  # as grep with no match: a mistyped name is not a success, nor an error
        say(f"nothing in the index is named {', '.join(map(repr, targets))} (a file, a folder or a text id; "
            "searchapp documents lists them)", err=True)
        raise typer.Exit(EXIT_NO_MATCH)


def documents(
    index: IndexOpt = DEFAULT_INDEX,
    collection: Annotated[str | None, typer.Option(
        help="Only the documents of this named collection (`searchapp collections` lists them).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List the indexed documents: path (or text id), source, passages, size, modification time when indexed,
    when it was indexed and its collection."""
    import datetime

    from searchapp.index import Index

    with errors(), Index(index) as ix:
        docs = ix.documents(collection=collection)
    if as_json:
        emit_json({"documents": [d.to_dict() for d in docs]})
        return
    named = any(d.collection is not None for d in docs)
    width = max([len("collection")] + [len(d.collection or "-") for d in docs]) if named else 0
    say(f"{'passages':>8}  {'size':>10}  {'modified':>16}  {'indexed':>16}  "
        + (f"{'collection':<{width}}  " if named else "") + "source  path")
    for d in docs:
        when = datetime.datetime.fromtimestamp(d.mtime).strftime("%Y-%m-%d %H:%M") if d.mtime else "-"
        indexed = (datetime.datetime.fromtimestamp(d.indexed_at).strftime("%Y-%m-%d %H:%M")
                   if d.indexed_at is not None else "-")
        group = f"{d.collection or '-':<{width}}  " if named else ""
        say(f"{d.passages:>8}  {human_size(d.size):>10}  {when:>16}  {indexed:>16}  {group}"
            f"{shown_key(d.path, d.source)}")


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


def lexical_engine(
    engine: Annotated[str, typer.Argument(help="fts5 or tantivy.")],
    index: IndexOpt = DEFAULT_INDEX,
    wait: WaitOpt = 0.0,
    as_json: JsonOpt = False,
) -> None:
    """Move a folder index to another lexical engine, rebuilt from its stored passages (no model runs): tantivy,
    a new index's default, stops at the top k; fts5 lives in the index database (docs/cli.md)."""
    import time

    from searchapp.index import Index

    started = time.monotonic()
    with errors(), Index(index, lock_wait=wait) as ix:
        before = ix.stats().facts.get("lexical_engine")
        if before != engine:
            say(f"moving the lexical index of {display_path(str(index))} from {before} to {engine}", err=True)
        n = ix.use_lexical_engine(engine)
        facts = ix.stats().facts
    seconds = round(time.monotonic() - started, 1)
    if as_json:
        emit_json({"lexical_engine": facts.get("lexical_engine"), "previous": before, "passages": n,
                   "lexical_bytes": facts.get("lexical_bytes"), "seconds": seconds})
        return
    if before == engine:
        say(f"the lexical engine is already {engine}")
        return
    say(f"lexical engine {engine}: {n} passages indexed in {seconds} s, "
        f"{human_size(int(facts.get('lexical_bytes') or 0))}")
