"""How hits are shown: the JSON document of a query's hits, or the table a person reads (scores, where a
passage stands, its snippet with the query's terms marked, the explanation)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

import typer

from searchapp.clean import clean_map
from searchapp.cli.common import (
    place,
    say,
    say_styled,
    shown_key,
)
from searchapp.ingest.sections import SEPARATOR, shown_with_title
from searchapp.types import CLEAN, EXACT, Explanation, Hit, Snippet, TextForm


def render_hits(query: str, mode: str, hits: list[Any], as_json: bool, header: bool, text: TextForm = EXACT) -> None:
    """One query's hits: a JSON document (one line each with --file), or a readable table; each hit's passage in
    the form ``text`` names."""
    if as_json:
        doc = {"query": query, "mode": mode, "hits": [h.to_dict(text=text) for h in hits]}
        typer.echo(json.dumps(doc, ensure_ascii=False) if header else json.dumps(doc, ensure_ascii=False, indent=2))
        return
    if header:
        say(f"# {query}")
    if not hits:
        say("no results")
        return
    say(f"  #  score  source  path  (score: {_SCORE_MEANING[mode]}; higher ranks first)")
    for h in hits:
        n = len(h.other_passages or ())
        more = f"  (+{n} more passage{'s' if n > 1 else ''})" if n else ""
        say(f"{h.rank:>3}  {h.score:.3f}  {shown_key(h.path, h.source)}{place(h.match_line, h.page)}  "
            f"passage {h.passage_id}{more}")
        if where := _where(h):
            say(f"     {where}")
        say_styled(_snippet_pieces(h, text == CLEAN), indent=5)
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
    path = shown_with_title(hit.title, hit.section)  # the title, then the section without a first heading that
    if named or not hit.title:  # repeats it (a file's title at the root of its sections, say)
        return path
    return path[len(hit.title):].removeprefix(SEPARATOR)


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
