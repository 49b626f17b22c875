"""The rerank stage's slot: a :class:`Reranker` re-scores a query's best passages from their text, after the mode's
ranking (``query/ranking.py``). None ships: a reranker is registered by name (:func:`register_reranker`, as
poolings and fusion methods are) and chosen per index or per query by the ``rerank`` setting
(``query/fusion.py``), so that one registered in a process reaches ``Index.search``, the HTTP API, the MCP
server, ``--explain`` and ``searchapp eval`` with no other edit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

STAGE = "rerank"  # the stage's name in a hit's scores


class Reranker(Protocol):
    """Scores passages for a query from their text: higher is better; one score per text, in their order."""

    def score(self, query: str, texts: Sequence[str]) -> Sequence[float]: ...


_RERANKERS: dict[str, Callable[[], Reranker]] = {}
_MADE: dict[str, Reranker] = {}


def register_reranker(name: str) -> Callable[[Callable[[], Reranker]], Callable[[], Reranker]]:
    """Add a reranker under ``name``: a factory called once, on the first query that asks for it."""

    def deco(factory: Callable[[], Reranker]) -> Callable[[], Reranker]:
        _RERANKERS[name] = factory
        _MADE.pop(name, None)
        return factory

    return deco


def unregister_reranker(name: str) -> None:
    """Take ``name`` out of the registry (a test's, or a plugin's being unloaded)."""
    _RERANKERS.pop(name, None)
    _MADE.pop(name, None)


def reranker_names() -> list[str]:
    """The valid values of the ``rerank`` setting: ``""`` (no rerank stage) and every registered name."""
    return ["", *_RERANKERS]


def reranker(name: str) -> Reranker:
    """The reranker registered as ``name``, made on first use."""
    if name not in _MADE:
        _MADE[name] = _RERANKERS[name]()
    return _MADE[name]
