"""Where a query's terms occur in a passage (or any stretch of a document's text), and the best window of the
passage to show for them.

Terms are analysed as the lexical side analyses them (``analysis.py``: its query terms, stopwords dropped, and
FTS5's own tokenizer for lower-casing, accent folding and Porter stemming), so a word is highlighted exactly
when BM25 counted it: "keys" in the query lights up "key" and "Keys" in the text, never "keyboard".

Offsets are into the document's text (a passage is ``document[start:end]``), so a client can cut the window and
its highlights from the text it already has. Passage text is untrusted: nothing here renders it; the CLI escapes
it before printing (``cli/common.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from searchapp.analysis import ANALYSIS
from searchapp.types import Snippet

WINDOW = 160  # characters of a snippet, about two lines of a terminal


@dataclass(frozen=True)
class Occurrence:
    """One word of a passage that matches a query term: its span in the passage and the stems it shares."""

    start: int
    end: int
    stems: frozenset[str]


def _heads(stem: str) -> tuple[str, ...]:
    """The beginnings (a word's first three letters, lower-cased; two or one for a shorter stem) of the ASCII
    words that can stem to ``stem``.

    Porter only rewrites suffixes, and every rewrite keeps a non-empty stem in front of it: a stem of three letters
    or more begins with its word's first three, one of two with its word's first two ("ties" -> "ti"), one of one
    with its word's first ("ies" -> "i"). What FTS5's Porter appends ("e" of "rating" -> "rate") comes after the
    third letter. One rewrite changes a letter a stem begins with: a final "y" after a vowel becomes "i" ("day" ->
    "dai", "eyed" -> "ei"; "ay", too short to stem, stays). tests/unit/test_snippet_window.py checks this against
    the real tokenizer.
    """
    head = stem[:3]
    return (head, head[:-1] + "y") if len(head) > 1 and head[-1] == "i" else (head,)


class QueryTerms:
    """A query's terms, analysed once and then looked for in any number of passages."""

    def __init__(self, query: str) -> None:
        self.terms = ANALYSIS.query_words(query)
        self.term_stems = dict(zip(self.terms, ANALYSIS.stems(self.terms), strict=True))
        self.stems: frozenset[str] = frozenset().union(*self.term_stems.values())
        self._heads = frozenset(h for s in self.stems for h in _heads(s))

    def _candidates(self, text: str) -> dict[str, list[int]]:
        """The distinct words of ``text`` that may stem to a query stem, each with its places in ``text``: all
        but those that cannot. A non-ASCII word is always analysed (its folding and splitting are the
        tokenizer's to decide); an ASCII one only where it begins with the beginning of a query stem
        (:func:`_heads`, in either case). Found by :func:`word_places` rather than by cutting every word: a
        query's hits hold hundreds of distinct words, most of which no query stem begins."""
        return ANALYSIS.word_places(text, self._heads)

    def find(self, text: str) -> list[Occurrence]:
        """Every word of ``text`` whose stems meet the query's, in order."""
        return self.find_many([text])[0]

    def find_many(self, texts: Sequence[str]) -> list[list[Occurrence]]:
        """:meth:`find` for several passages, their words analysed in one pass of the tokenizer."""
        out: list[list[Occurrence]] = [[] for _ in texts]
        if not self.stems:
            return out
        # Passages repeat their words, and most words cannot meet any query stem: analyse each distinct
        # candidate once, in all the passages at once (a space never joins two words, so a word's places in the
        # joined text are its places in its passage).
        joined = " ".join(texts)
        places = self._candidates(joined)
        words = list(places)
        shared = {w: found & self.stems for w, found in zip(words, ANALYSIS.stems(words), strict=True)}
        spans = sorted((at, w) for w, found in shared.items() if found for at in places[w])
        ends = list(itertools.accumulate(len(t) + 1 for t in texts))  # where each next passage begins
        n = 0
        for at, word in spans:
            while at >= ends[n]:
                n += 1
            start = at - (ends[n] - len(texts[n]) - 1)
            out[n].append(Occurrence(start, start + len(word), shared[word]))
        return out

    def matched(self, found: list[Occurrence]) -> list[str]:
        """The query terms (as the query spells them, lower-cased) that ``found`` contains, in query order."""
        seen = frozenset().union(*(o.stems for o in found)) if found else frozenset()
        return [t for t in self.terms if self.term_stems[t] & seen]


def best_window(text: str, found: list[Occurrence], width: int = WINDOW) -> tuple[int, int]:
    """The ``width``-character window of ``text`` that holds the most distinct query terms (then the most
    matches, then the earliest), centred on its matches and cut at word boundaries; the start of the text when
    nothing matched."""
    if len(text) <= width:
        return 0, len(text)
    best: tuple[int, int, int, int] | None = None  # (-distinct, -count, first, last) of the best run
    # The runs found[i..last], each as long as the width lets it be: both ends only move forward (words do not
    # overlap, so their ends are in order too), and ``held`` counts the stems the run holds.
    held: dict[str, int] = {}
    last = -1
    for i, first in enumerate(found):
        if last < i:  # the first run, or one that holds no word of the run before
            last = i
            for s in first.stems:
                held[s] = held.get(s, 0) + 1
        while last + 1 < len(found) and found[last + 1].end - first.start <= width:
            last += 1
            for s in found[last].stems:
                held[s] = held.get(s, 0) + 1
        key = (-len(held), i - last - 1, i, last)
        if best is None or key < best:
            best = key
        for s in first.stems:
            if held[s] == 1:
                del held[s]
            else:
                held[s] -= 1
    if best is None:
        start, hi = 0, 0
    else:
        lo, hi = found[best[2]].start, found[best[3]].end
        start = max(0, min(lo - (width - (hi - lo)) // 2, len(text) - width))
        start = _word_start(text, start, lo)
    end = min(len(text), start + width)
    return start, _word_end(text, end, max(start, hi))


def _word_start(text: str, start: int, limit: int) -> int:
    """``start`` moved forward past a word it cuts (never past ``limit``, the first match)."""
    if start == 0 or text[start - 1].isspace():
        return start
    nxt = start
    while nxt < limit and not text[nxt].isspace():
        nxt += 1
    return nxt + 1 if nxt < limit else start


def _word_end(text: str, end: int, floor: int) -> int:
    """``end`` moved back before a word it cuts (never before ``floor``, the end of the last match)."""
    if end >= len(text) or text[end].isspace():
        return end
    prev = end
    while prev > floor and not text[prev - 1].isspace():
        prev -= 1
    return prev - 1 if prev > floor else end


def snippet(terms: QueryTerms, text: str, offset: int, width: int = WINDOW,
            found: list[Occurrence] | None = None) -> tuple[Snippet, list[Occurrence]]:
    """The snippet of a passage ``text`` that starts at ``offset`` in its document, and the matches found in it
    (for whoever also wants the matched terms). ``found``: the passage's matches if already known
    (:meth:`QueryTerms.find_many`)."""
    if found is None:
        found = terms.find(text)
    start, end = best_window(text, found, width)
    marks = tuple((offset + o.start, offset + o.end) for o in found if o.start >= start and o.end <= end)
    return Snippet(offset + start, offset + end, marks), found


def highlights(terms: QueryTerms, text: str, offset: int, n_chars: int) -> tuple[tuple[int, int], ...]:
    """The words of ``text``, the stretch of a document of ``n_chars`` characters that starts at ``offset``, that
    match the query: ``[start, end)`` in document offsets, in order, as a hit's snippet highlights them.

    Where the document goes on past an edge of ``text``, a match touching that edge may be a piece of a longer
    word ("key" of "keyboard") and is left out.
    """
    cut_before, cut_after = offset > 0, offset + len(text) < n_chars
    return tuple(
        (offset + o.start, offset + o.end) for o in terms.find(text)
        if not (cut_before and o.start == 0) and not (cut_after and o.end == len(text))
    )
