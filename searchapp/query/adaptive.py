"""Query-adaptive convex fusion: how much to trust each side, decided per query from two pieces of evidence.

Measured on the visible splits with leave-one-collection-out (docs/evaluation.md):

1. **The query's form.** With the bundled model the dense retriever is far ahead of BM25 on questions (factoid
   or not: WikiQA, TrecQA, ANTIQUE); on claims and keyword-like statements (SciFact) the two are level and
   complementary. A query that reads as a question (it ends with "?" or starts with a question word or
   auxiliary verb) starts from the dense weight ``alpha_question``, any other from ``alpha_statement``.
2. **Whether BM25 tells the dense side's best candidates apart.** When every one of the dense side's top
   ``DENSE_TOP`` candidates matches the query's words about equally (the sentences of one Wikipedia page all
   carry its title; every answer in a pooled collection repeats the question's words), BM25's votes among them
   are noise. The spread of their BM25 scores, in standard deviations of BM25 over all the candidates, is the
   evidence: below ``lexical_spread`` the lexical weight shrinks in proportion (``0`` turns this off).

Both sides are z-scored over the candidates by default, which keeps the cosine's narrow band from being swamped
by BM25's spread.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Protocol

from searchapp.store.rows import Candidates

DENSE_TOP = 10  # the dense candidates whose BM25 spread is measured


class AdaptiveWeights(Protocol):
    """The settings the rule reads (``Fusion`` has them)."""

    @property
    def alpha_question(self) -> float: ...

    @property
    def alpha_statement(self) -> float: ...

    @property
    def lexical_spread(self) -> float: ...


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


@dataclass(frozen=True)
class AdaptiveChoice:
    """The dense weight chosen for one query and the evidence behind it."""

    alpha: float  # dense weight of the convex combination
    question: bool  # the query reads as a question
    base: float  # alpha_question or alpha_statement
    spread: float  # BM25 spread among the dense top candidates, in candidate standard deviations

    def reason(self) -> str:
        """One line a person can read."""
        form = "question" if self.question else "statement"
        return f"{form}: dense weight {self.base:g}; BM25 spread among the dense top {DENSE_TOP} {self.spread:.2f} sd"


def lexical_spread(cands: Candidates, top: int = DENSE_TOP) -> float:
    """Population standard deviation of the BM25 scores of the dense side's ``top`` candidates, divided by
    that of all candidates (0 when BM25 is constant over the candidates)."""
    if not cands.lexical:
        return 0.0
    values = list(cands.lexical.values())
    mean = sum(values) / len(values)
    sd_all = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    if sd_all == 0:
        return 0.0
    best = sorted(cands.dense, key=lambda p: (-cands.dense[p], p))[:top]
    chosen = [cands.lexical.get(p, 0.0) for p in best]
    m = sum(chosen) / len(chosen)
    return math.sqrt(sum((v - m) ** 2 for v in chosen) / len(chosen)) / sd_all


def adaptive_choice(cands: Candidates, fusion: AdaptiveWeights) -> AdaptiveChoice:
    """The dense weight for this query's convex combination, with why."""
    question = is_question(cands.query)
    base = fusion.alpha_question if question else fusion.alpha_statement
    spread = lexical_spread(cands)
    alpha = base
    if spread < fusion.lexical_spread:
        alpha = 1.0 - (1.0 - base) * spread / fusion.lexical_spread
    return AdaptiveChoice(alpha, question, base, spread)


def adaptive_alpha(cands: Candidates, fusion: AdaptiveWeights) -> float:
    """The dense weight for this query's convex combination."""
    return adaptive_choice(cands, fusion).alpha
