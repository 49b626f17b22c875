"""A LangChain retriever over searchapp: ``SearchappRetriever(searcher=Index(...)).invoke("question")``.

Needs the ``langchain`` extra (langchain-core).
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from searchapp.adapters.common import Searcher, hit_metadata
from searchapp.types import EXACT, check_text_form


class SearchappRetriever(BaseRetriever):
    """Returns the ``k`` best passages as ``Document`` s (``page_content`` the passage, exact or with
    ``text="clean"`` its clean text; ``metadata`` the
    document's metadata plus path, title, span and scores; ``id`` the passage id)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    searcher: Any  # Searcher; Any because pydantic cannot validate a Protocol
    k: int = 4
    mode: str = "hybrid"
    filters: dict[str, Any] | None = None
    text: str = EXACT  # a TextForm; "clean": page_content is the hit's clean_text (markup blanks collapsed)

    def model_post_init(self, context: Any) -> None:
        check_text_form(self.text)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        searcher: Searcher = self.searcher
        hits = searcher.search(query, k=self.k, mode=self.mode, filters=self.filters)
        return [Document(page_content=h.text_as(self.text), metadata=hit_metadata(h), id=str(h.passage_id))
                for h in hits]
