"""Query-adaptive convex fusion: how much to trust each side, decided per query from the question's form.

Measured on the visible splits (docs/evaluation.md): with the bundled model the dense retriever is far ahead
of BM25 on questions (factoid or not: WikiQA, TrecQA, ANTIQUE), so fusing them evenly loses; on claims and
keyword-like statements (SciFact) the two are level and complementary, and an even fusion gains. A query
that reads as a question (it ends with "?" or starts with a question word or auxiliary verb) therefore gets
the dense weight ``alpha_question``; any other query gets ``alpha_statement``. Both sides are z-scored over
the candidates by default, which keeps the cosine's narrow band from being swamped by BM25's spread.
"""

from __future__ import annotations

import re
from typing import Protocol

from searchapp.types import Candidates


class AdaptiveWeights(Protocol):
    """The two dense weights the rule chooses between (``Fusion`` has them)."""

    @property
    def alpha_question(self) -> float: ...

    @property
    def alpha_statement(self) -> float: ...

QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how "
    "is are was were am do does did can could should would will shall has have had may might must".split()
)
_WORD = re.compile(r"[^\W\d_]+")


def is_question(query: str) -> bool:
    """True for a query phrased as a question: ends with "?", or starts with a question word or auxiliary."""
    text = query.strip()
    if text.endswith("?"):
        return True
    first = _WORD.search(text.lower())
    return first is not None and first.group(0) in QUESTION_WORDS


def adaptive_alpha(cands: Candidates, fusion: AdaptiveWeights) -> float:
    """The dense weight for this query's convex combination."""
    return fusion.alpha_question if is_question(cands.query) else fusion.alpha_statement
