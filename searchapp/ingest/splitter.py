"""Sentence-aware splitting of a document's text into passages with exact character spans.

Pure: the tokenizer enters as a function from texts to word-piece character offsets, so the splitter can be
tested with a whitespace tokenizer and used with the model's own.

Guarantees (tested): ``text[span.start:span.end]`` is the passage; every passage has at most
``max_tokens - SPECIAL_TOKENS`` word pieces when tokenized on its own, and at most ``max_chars`` characters;
every non-whitespace character of the text lies in some passage (no silent truncation).

An offsets function may say that its tokenizer never makes a word piece across ASCII whitespace, and that what it
makes of a text between two such spaces depends on that text alone (BERT's normaliser and pre-tokenizer: an
attribute :data:`SPLITS_AT_WHITESPACE` set true). Then a passage of whole sentences joined at ASCII whitespace has
the sum of their counts, and is not tokenized again to check it; any other passage is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise

from searchapp.errors import ConfigError
from searchapp.types import Span

OffsetsFn = Callable[[list[str]], list[list[tuple[int, int]]]]
# The attribute of an offsets function that, set true, says its counts add up over ASCII whitespace (above).
SPLITS_AT_WHITESPACE = "splits_at_whitespace"
# The joins across which such a tokenizer's counts add up: whitespace every whitespace pre-tokenizer splits at, and
# that BERT's normaliser keeps as whitespace (it deletes other control characters, such as \x0b and \x85, joining
# the words beside them).
_JOINS = frozenset(" \t\n\r")

# A sentence ends after terminal punctuation and the closing quotes or brackets after it (theirs: group 1 is the
# whitespace that follows), or at a line break: headings, list items and table rows are units of their own.
_BOUNDARY = re.compile(r"[.!?\u2026][\"')\]\u201d\u2019]*(\s+)|\n\s*")
_SPECIAL = 2
# Tokenize at most this many sentences, and about this many characters, per call: the tokenizer keeps tens of
# bytes per character of what it is given (a 5 MB line at once took 350 MB), so memory stays bounded on very
# large files and lines.
_CHUNK = 2048
_CHUNK_CHARS = 1 << 18
# A longer sentence is cut before tokenizing, at a space in its second half if there is one, else at a multiple
# of max_chars (where a run without spaces would be cut by characters anyway).
_PIECE_CHARS = 1 << 16


@dataclass(frozen=True)
class SplitterConfig:
    """Passage budget: ``max_tokens`` counts the model's special tokens; ``overlap`` is in word pieces."""

    max_tokens: int = 256
    overlap: int = 0
    max_chars: int = 4000

    def __post_init__(self) -> None:
        if self.max_tokens <= _SPECIAL + 1:
            raise ConfigError(f"max_tokens must be greater than {_SPECIAL + 1}, got {self.max_tokens}")
        if not 0 <= self.overlap < self.budget:
            raise ConfigError(f"overlap must be in [0, {self.budget}), got {self.overlap}")
        if self.max_chars < 16:
            raise ConfigError(f"max_chars must be at least 16, got {self.max_chars}")

    @property
    def budget(self) -> int:
        """Word pieces available to the passage text itself."""
        return self.max_tokens - _SPECIAL


def sentences(text: str) -> Iterator[tuple[int, int]]:
    """Spans of the sentences of ``text``, trimmed of surrounding whitespace, in order."""
    pos = 0
    for m in _BOUNDARY.finditer(text):
        yield from _trimmed(text, pos, m.start(1) if m.group(1) is not None else m.start())
        pos = m.end()
    yield from _trimmed(text, pos, len(text))


def _trimmed(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        yield start, end


def split(
    text: str, offsets_fn: OffsetsFn, config: SplitterConfig | None = None, breaks: Sequence[int] = ()
) -> list[Span]:
    """Split ``text`` into passages packed from whole sentences up to the token budget.

    A sentence longer than the budget falls back to windows of word pieces; a word piece longer than
    ``max_chars`` (a run without spaces) is cut by characters. Overlap repeats trailing sentences of the
    previous passage, up to ``overlap`` word pieces. ``breaks``: offsets no passage runs across (a code file's
    definitions start there); the passage after one starts afresh, with no overlap from before it.
    """
    config = config or SplitterConfig()
    # Sentences and units flow through generators: only the passages are ever held for the whole text, so a
    # file of tens of megabytes does not hold a Python object per sentence.
    packed = _pack(text, _block_starts(text, _all_units(text, offsets_fn, config)), config, breaks)
    additive = bool(getattr(offsets_fn, SPLITS_AT_WHITESPACE, False))
    return _enforce(text, packed, offsets_fn, config, additive)


def _all_units(text: str, offsets_fn: OffsetsFn, config: SplitterConfig) -> Iterator[tuple[Span, bool]]:
    """Each unit with whether its count is its text's own (a whole sentence tokenized as it is, not a window)."""
    cap = max(1, _PIECE_CHARS // config.max_chars) * config.max_chars
    pieces = (piece for s, e in sentences(text) for piece in _pieces(text, s, e, cap))
    for chunk in _batches(pieces):
        offsets = offsets_fn([text[s:e] for s, e in chunk])
        for (s, e), offs in zip(chunk, offsets, strict=True):
            units = _units(text, s, e, offs, config)
            whole = len(units) == 1 and units[0].start == s and units[0].end == e
            for unit in units:
                yield unit, whole


def _pieces(text: str, start: int, end: int, cap: int) -> Iterator[tuple[int, int]]:
    while end - start > cap:
        cut = max(text.rfind(" ", start + cap // 2, start + cap), text.rfind("\t", start + cap // 2, start + cap))
        cut = cut if cut > start else start + cap
        yield from _trimmed(text, start, cut)
        start = cut
    yield from _trimmed(text, start, end)


def _batches(spans: Iterable[tuple[int, int]]) -> Iterator[list[tuple[int, int]]]:
    """Consecutive groups of spans, each of at most _CHUNK spans and about _CHUNK_CHARS characters."""
    batch: list[tuple[int, int]] = []
    chars = 0
    for span in spans:
        batch.append(span)
        chars += span[1] - span[0]
        if len(batch) >= _CHUNK or chars >= _CHUNK_CHARS:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")


def _block_starts(text: str, units: Iterable[tuple[Span, bool]]) -> Iterator[tuple[Span, bool, bool]]:
    """Each unit with whether its count is its own (as given) and whether it opens a block: it follows a blank
    line, or it is a Markdown heading on a new line."""
    previous_end = 0
    for unit, whole in units:
        gap = text[previous_end : unit.start]
        yield unit, whole, previous_end > 0 and (
            _BLANK_LINE.search(gap) is not None or ("\n" in gap and text.startswith("#", unit.start))
        )
        previous_end = unit.end


def _units(text: str, start: int, end: int, offs: list[tuple[int, int]], config: SplitterConfig) -> list[Span]:
    """One sentence as one unit, or as token windows when it exceeds the budget or the character cap.

    Windows are cut at the first character of a window's first word piece and together cover the whole
    sentence, so characters the tokenizer drops (control characters) are never lost between windows.
    """
    if len(offs) <= config.budget and end - start <= config.max_chars:
        return [Span(start, end, len(offs))]
    cuts: list[tuple[int, int]] = []  # (char offset in sentence, word pieces before it since last cut)
    count = 0
    window_start = 0
    for piece_start, piece_end in offs:
        if count and (count >= config.budget or piece_end - window_start > config.max_chars):
            cuts.append((piece_start, count))
            window_start, count = piece_start, 0
        count += 1
    bounds = [0] + [c for c, _ in cuts] + [end - start]
    counts = [n for _, n in cuts] + [count]
    out: list[Span] = []
    for (a, b), n in zip(zip(bounds[:-1], bounds[1:], strict=True), counts, strict=True):
        for s, e in _trimmed(text, start + a, start + b):
            out.extend(_char_cut(Span(s, e, n), config.max_chars))
    return out


def _char_cut(unit: Span, max_chars: int) -> list[Span]:
    # A single word piece can cover thousands of characters (an unknown-token run with no spaces).
    if unit.end - unit.start <= max_chars:
        return [unit]
    return [
        Span(s, min(s + max_chars, unit.end), 1) for s in range(unit.start, unit.end, max_chars)
    ]


def _pack(
    text: str, units: Iterable[tuple[Span, bool, bool]], config: SplitterConfig, breaks: Sequence[int] = ()
) -> list[tuple[Span, bool]]:
    """Passages packed from ``units``, each with whether its count is a sum that holds for an additive tokenizer:
    all its units whole, every join between them holding ASCII whitespace; none across an offset of ``breaks``."""
    # A passage that has reached half the budget ends at the next paragraph or heading rather than running on
    # into an unrelated section: passages stay on one topic, which is what dense retrieval scores.
    passages: list[tuple[Span, bool]] = []
    current: list[Span] = []
    whole: list[bool] = []
    tokens = 0

    def close() -> None:
        joins = all(_joined_at_whitespace(text[a.end : b.start]) for a, b in pairwise(current))
        passages.append((_join(current, tokens), all(whole) and joins))

    pending = iter(sorted(breaks))
    upcoming = next(pending, None)
    for unit, unit_whole, opens_block in units:
        crossed = False
        while upcoming is not None and upcoming <= unit.start:
            crossed, upcoming = True, next(pending, None)
        fits = not crossed and tokens + unit.n_tokens <= config.budget
        fits = fits and (not current or unit.end - current[0].start <= config.max_chars)
        fits = fits and not (opens_block and tokens >= config.budget // 2)
        if current and not fits:
            close()
            current, tokens = ([], 0) if crossed else _overlap_tail(current, unit, config)
            whole = whole[len(whole) - len(current) :]
        current.append(unit)
        whole.append(unit_whole)
        tokens += unit.n_tokens
    if current:
        close()
    return passages


def _overlap_tail(previous: list[Span], nxt: Span, config: SplitterConfig) -> tuple[list[Span], int]:
    tail: list[Span] = []
    tokens = 0
    for unit in reversed(previous):
        if tokens + unit.n_tokens > config.overlap:
            break
        if tokens + unit.n_tokens + nxt.n_tokens > config.budget or nxt.end - unit.start > config.max_chars:
            break
        tail.insert(0, unit)
        tokens += unit.n_tokens
    return tail, tokens


def _joined_at_whitespace(gap: str) -> bool:
    return gap.isspace() and not _JOINS.isdisjoint(gap)


def _join(units: list[Span], tokens: int) -> Span:
    return Span(units[0].start, units[-1].end, tokens)


def _enforce(
    text: str, passages: list[tuple[Span, bool]], offsets_fn: OffsetsFn, config: SplitterConfig, additive: bool
) -> list[Span]:
    """Re-tokenize every passage on its own and halve any that exceeds the budget; with an ``additive`` tokenizer,
    only those whose count is not a sum known to hold.

    Counting sentence by sentence can differ from tokenizing the joined passage (a token window that cut a
    word, or a tokenizer that merges across the join); this pass makes the guarantee exact.
    """
    out: list[Span] = [p for p, exact in passages if additive and exact]
    todo = [p for p, exact in passages if not (additive and exact)]
    while todo:
        counts = _token_counts(text, todo, offsets_fn)
        again: list[Span] = []
        for p, n in zip(todo, counts, strict=True):
            if n <= config.budget:
                out.append(Span(p.start, p.end, n))
                continue
            offs = offsets_fn([text[p.start : p.end]])[0]
            mid = p.start + offs[len(offs) // 2][0]
            if mid <= p.start:  # cannot happen for n >= 2 pieces with distinct starts; guard anyway
                mid = p.start + (p.end - p.start) // 2
            again.extend(x for x in (Span(p.start, mid, 0), Span(mid, p.end, 0)) if x.end > x.start)
        todo = [Span(*_strip(text, p.start, p.end), 0) for p in again]
        todo = [p for p in todo if p.end > p.start]
    out.sort(key=lambda p: p.start)
    return out


def _token_counts(text: str, spans: list[Span], offsets_fn: OffsetsFn) -> list[int]:
    """Word pieces in each span, tokenized a batch at a time (the offsets of a whole file at once would take
    about a hundred bytes per word piece)."""
    counts: list[int] = []
    for chunk in _batches((p.start, p.end) for p in spans):
        counts.extend(len(o) for o in offsets_fn([text[s:e] for s, e in chunk]))
    return counts


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    spans = list(_trimmed(text, start, end))
    return spans[0] if spans else (start, start)
