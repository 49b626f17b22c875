"""Searching: lexical, dense, or hybrid, over the stores it is given.

The engine gathers what a query's mode needs from the stores' reader (hybrid: ``k0`` candidates from each side,
every candidate with both real scores: a passage the lexical side did not return gets its BM25 score, 0 if it
shares no term with the query; one the dense side did not return gets its cosine from its stored vector), hands it
to the one ranking pipeline (``query/ranking.py``: the mode's ranking, the cosine threshold, a rerank stage,
grouping by document) that an evaluation also scores, and makes the page it asked for into hits. Queries are
encoded in batches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from searchapp.lines import load_source_lines, spot
from searchapp.query.fusion import Fusion
from searchapp.query.options import SearchKwargs, check_queries, check_query_terms, resolve
from searchapp.query.ranking import DENSE, LEXICAL, Gathered, Ranked, Ranking
from searchapp.query.snippets import QueryTerms, snippet
from searchapp.store.base import Reader, Stores
from searchapp.store.rows import PassageRecord
from searchapp.types import MAX_WHOLE, Explanation, Hit

if TYPE_CHECKING:
    from typing_extensions import Unpack

# Queries -> float32 (n, d) unit vectors (truncated to the model's limit).
QueryEncoder = Callable[[list[str]], np.ndarray]


class QueryEngine:
    """Searches ``stores``; ``encode`` embeds queries (called only in dense and hybrid mode, so a lexical query
    never loads the model); ``fusion`` is the index's hybrid default."""

    def __init__(self, stores: Stores, encode: QueryEncoder, fusion: Fusion) -> None:
        self.stores = stores
        self.encode = encode
        self.fusion = fusion

    def search_batch(self, queries: Sequence[str], **options: Unpack[SearchKwargs]) -> list[list[Hit]]:
        """The ``k`` best passages for each query, after skipping the first ``offset``; ``filters`` (a
        :class:`Filter` or its JSON form) restricts the documents; ``explain`` gives every hit an
        :class:`Explanation`; ``min_score`` keeps only passages whose cosine with the query is at least that
        (dense and hybrid modes); ``group_by="document"`` gives each document's best passage once, its other
        ranked passages' ids in ``other_passages``; the other keywords override the hybrid settings (the fields
        of :class:`Fusion`). The options are declared in ``query/options.py``."""
        asked, settings = resolve(options, self.fusion)
        queries = check_queries(queries)
        if asked["mode"] != "dense":
            check_query_terms(queries)
        mode, offset, explain, group_by = asked["mode"], asked["offset"], asked["explain"], asked["group_by"]
        need = offset + asked["k"]
        live = [i for i, q in enumerate(queries) if q.strip()]
        out: list[list[Hit]] = [[] for _ in queries]
        if not live:
            return out
        qvecs = None if mode == "lexical" else self.encode([queries[i] for i in live])
        with self.stores.reader(asked["filters"], dense=qvecs is not None) as reader:
            for n, i in enumerate(live):
                search = _Search(reader, queries[i], None if qvecs is None else qvecs[n], mode, settings, explain,
                                 asked["min_score"])
                if group_by is None:
                    ranked = search.rank(need)
                    page = [(pid, score, None) for pid, score in ranked.run[offset:need]]
                    records = reader.hydrate([pid for pid, _, _ in page])
                else:
                    ranked, groups = search.grouped(need)
                    page, records = _shown(reader, groups[offset:], need - offset)
                out[i] = _Hits(ranked).hits(page, records, QueryTerms(queries[i]), explain, first_rank=offset + 1)
        if asked["filters"] is not None and not all(out[i] for i in live):
            self.stores.check_held(asked["filters"])
        return out


def _shown(
    reader: Reader, groups: list[tuple[int, float, list[int]]], k: int
) -> tuple[list[tuple[int, float, list[int]]], dict[int, PassageRecord]]:
    """The first ``k`` of ``groups`` whose best passage is still there, hydrated: a concurrent ingest may remove a
    document between grouping (which read only the passages' documents) and this read; the next group takes its
    place."""
    page: list[tuple[int, float, list[int]]] = []
    records: dict[int, PassageRecord] = {}
    while groups and len(page) < k:
        taken, groups = groups[: k - len(page)], groups[k - len(page) :]
        found = reader.hydrate([pid for pid, _, _ in taken])
        records.update(found)
        page += [g for g in taken if g[0] in found]
    return page, records


# How much deeper than the documents asked a grouped search ranks passages at first, and by how much it deepens
# while documents are missing (every passage of a few documents may rank first); it stops at MAX_DEPTH passages.
GROUP_DEPTH, DEEPEN, MAX_DEPTH = 3, 4, 10_000


@dataclass
class _Search:
    """One query's search over a reader: what its mode needs gathered at any depth, ranked and grouped by the one
    ranking pipeline (``query/ranking.py``)."""

    reader: Reader
    query: str
    qvec: np.ndarray | None
    mode: str
    settings: Fusion
    explain: bool
    min_score: float | None

    def rank(self, depth: int) -> Ranked:
        """The passages ranked ``depth`` deep (min_score applied after ranking: up to ``depth`` that pass).
        Hybrid takes ``max(k0, depth)`` candidates from each side."""
        ranking = Ranking(self.settings)
        depth = min(ranking.depth(depth), MAX_WHOLE)  # offset + k may pass what a store's LIMIT holds
        if self.qvec is None:
            gathered = Gathered(lexical=self.reader.lexical(self.query, depth), query=self.query)
            found = len(gathered.lexical or [])
        elif self.mode == "dense":
            gathered = Gathered(dense=self.reader.dense(self.qvec, depth), query=self.query)
            found = len(gathered.dense or [])
        else:
            cands = self.reader.gather(self.query, self.qvec, max(self.settings.k0, depth))
            gathered = Gathered(candidates=cands, query=self.query)
            found = len(cands.dense)
        ranked = ranking.passages(gathered, self.mode, self._texts, self.min_score, self.explain)
        # Fewer than asked: no passage was left out of the ranking, going deeper finds nothing new.
        ranked.complete = found < depth
        return ranked

    def _texts(self, pids: Sequence[int]) -> dict[int, str]:
        return {pid: rec.text for pid, rec in self.reader.hydrate(list(pids)).items()}

    def grouped(self, need: int) -> tuple[Ranked, list[tuple[int, float, list[int]]]]:
        """At least ``need`` documents' best passages (fewer when the ranking runs out), each with its document's
        other ranked passages, ranking deeper while documents are missing. Only the passages' documents are read
        (``Reader.documents_of``): the caller hydrates the page it shows."""
        depth = need * GROUP_DEPTH
        known: dict[int, int] = {}  # passage -> document, read once across deepenings
        while True:
            ranked = self.rank(depth)
            known.update(self.reader.documents_of([pid for pid, _ in ranked.run if pid not in known]))
            # A passage with no document was removed by a concurrent ingest after ranking: left out (None).
            docs = Ranking(self.settings).documents(ranked, known.get)
            if len(docs) >= need or ranked.complete or depth >= MAX_DEPTH:
                return ranked, [(d.best, d.score, d.others) for _, d in docs]
            depth = min(depth * DEEPEN, MAX_DEPTH)


@dataclass
class _Hits:
    """One query's ranking (``ranking.Ranked``) made hits: snippets, each stage's scores, explanations."""

    ranked: Ranked

    def hits(
        self, page: list[tuple[int, float, list[int] | None]], records: Mapping[int, PassageRecord],
        terms: QueryTerms, explain: bool, first_rank: int,
    ) -> list[Hit]:
        """``(passage id, score, the document's other passages or None)`` made hits, with snippets (and
        explanations), ranked from ``first_rank``."""
        hits: list[Hit] = []
        # A passage removed by a concurrent ingest after ranking has no record and is left out.
        kept = [(pid, score, others, records[pid]) for pid, score, others in page if pid in records]
        matches = terms.find_many([rec.text for *_, rec in kept])
        for (pid, score, others, rec), found in zip(kept, matches, strict=True):
            shown, found = snippet(terms, rec.text, rec.start, found=found)
            source_lines = load_source_lines(rec.source_lines)
            line, column, end_line, end_column = spot(rec.line, rec.column, rec.text, source_lines)
            scores = self.ranked.stage_scores(pid)
            hits.append(
                Hit(
                    rank=first_rank + len(hits), score=score, passage_id=pid, path=rec.path, title=rec.title,
                    start=rec.start, end=rec.end, text=rec.text, dense_score=scores.get(DENSE),
                    lexical_score=scores.get(LEXICAL), metadata=rec.metadata,
                    source=rec.source, snippet=shown, section=rec.section, line=line, column=column,
                    end_line=end_line, end_column=end_column, source_lines=source_lines, page=rec.page,
                    explain=self.explain(pid, tuple(terms.matched(found))) if explain else None,
                    other_passages=None if others is None else tuple(others), scores=scores,
                )
            )
        return hits

    def explain(self, pid: int, matched: tuple[str, ...]) -> Explanation:
        """Why ``pid`` ranks where it does."""
        scores = self.ranked.stage_scores(pid)
        dense, lexical = scores.get(DENSE), scores.get(LEXICAL)
        mode = self.ranked.mode
        w = self.ranked.weighting
        if w is None:
            side = "BM25" if mode == "lexical" else "cosine"
            return Explanation(dense, lexical, None, None, None, mode, f"{mode} mode: ranked by {side} alone",
                               matched)
        return Explanation(
            dense, lexical, w.dense.get(pid) if w.dense else None, w.lexical.get(pid) if w.lexical else None,
            w.alpha, self.ranked.fusion, w.reason, matched,
        )
