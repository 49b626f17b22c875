"""A LlamaIndex retriever over searchapp: ``SearchappRetriever(Index(...)).retrieve("question")``.

Needs the ``llamaindex`` extra (llama-index-core).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from searchapp.adapters.common import Searcher, hit_metadata
from searchapp.types import EXACT, TextForm, check_text_form


class SearchappRetriever(BaseRetriever):
    """Returns the ``k`` best passages as ``NodeWithScore`` (a ``TextNode`` with the passage, its character span
    in the document, its text exact or with ``text="clean"`` the hit's clean text, and the metadata of
    :func:`~searchapp.adapters.common.hit_metadata`; the hit's score)."""

    def __init__(
        self, searcher: Searcher, k: int = 4, mode: str = "hybrid", filters: dict[str, Any] | None = None,
        text: TextForm = EXACT, **kwargs: Any,
    ) -> None:
        self.searcher, self.k, self.mode, self.filters = searcher, k, mode, filters
        self.text = check_text_form(text)
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self.searcher.search(query_bundle.query_str, k=self.k, mode=self.mode, filters=self.filters)
        return [
            NodeWithScore(
                node=TextNode(id_=str(h.passage_id), text=h.text_as(self.text), metadata=hit_metadata(h),
                              start_char_idx=h.start, end_char_idx=h.end),
                score=h.score,
            )
            for h in hits
        ]
