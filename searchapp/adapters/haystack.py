"""A Haystack 2 retriever component over searchapp: ``SearchappRetriever(Index(...))`` in a ``Pipeline``.

Needs the ``haystack`` extra (haystack-ai).
"""

from __future__ import annotations

from typing import Any

from haystack import Document, component

from searchapp.adapters.common import Searcher, hit_metadata
from searchapp.types import EXACT, TextForm, check_text_form


@component
class SearchappRetriever:
    """Input ``query`` (and optionally ``top_k``, ``filters`` in searchapp's form); output ``documents``: the best
    passages as Haystack ``Document`` s (the content exact, or with ``text="clean"`` the hit's clean text) with
    ``score`` and the metadata of
    :func:`~searchapp.adapters.common.hit_metadata`."""

    def __init__(
        self, searcher: Searcher, top_k: int = 4, mode: str = "hybrid", filters: dict[str, Any] | None = None,
        text: TextForm = EXACT,
    ) -> None:
        self.searcher, self.top_k, self.mode, self.filters = searcher, top_k, mode, filters
        self.text = check_text_form(text)

    @component.output_types(documents=list[Document])
    def run(
        self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> dict[str, list[Document]]:
        hits = self.searcher.search(
            query, k=top_k or self.top_k, mode=self.mode, filters=filters if filters is not None else self.filters
        )
        return {
            "documents": [Document(id=str(h.passage_id), content=h.text_as(self.text), meta=hit_metadata(h),
                                   score=h.score) for h in hits]
        }
