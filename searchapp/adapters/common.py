"""What every adapter puts in its framework's document: the hit's metadata plus where the passage came from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from searchapp.query.options import SearchKwargs
from searchapp.types import Hit

if TYPE_CHECKING:
    from typing_extensions import Unpack


class Searcher(Protocol):
    """An :class:`searchapp.Index` or a :class:`searchapp.client.Client`: adapters work over either."""

    def search(self, query: str, **options: Unpack[SearchKwargs]) -> list[Hit]: ...


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """The passage's provenance and scores under fixed keys, then the document's own metadata, which is never
    overwritten: a user's ``path`` or ``score`` key stays theirs. All of the provenance is also under
    ``"searchapp"``, whatever the user's keys are."""
    provenance: dict[str, Any] = {
        "path": hit.path,
        "source": hit.source,
        "title": hit.title,
        "section": hit.section,
        "start": hit.start,
        "end": hit.end,
        "line": hit.line,
        "column": hit.column,
        "end_line": hit.end_line,
        "end_column": hit.end_column,
        "page": hit.page,
        "passage_id": hit.passage_id,
        "score": hit.score,
        "dense_score": hit.dense_score,
        "lexical_score": hit.lexical_score,
        "scores": dict(hit.scores),
    }
    return {**provenance, **hit.metadata, "searchapp": provenance}
