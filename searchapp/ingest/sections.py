"""Where a passage stands in its document: the headings it sits under (its section path)."""

from __future__ import annotations

from collections.abc import Sequence

from searchapp.types import Document, Heading, Span

SEPARATOR = " > "
# What the encoder sees of a passage (the ``passage_context`` setting): its text alone, or its section path on a
# line before it, so that a page's topic, named by its headings, is in every passage's vector.
PASSAGE_CONTEXTS = ("none", "section")
# The most characters of a section path put before a passage for the encoder (a word piece covers at least one
# character, so at most this many tokens).
CONTEXT_CHARS = 128
# A heading longer than this is cut (a heading line is what a loader says it is: bounded here, not trusted).
MAX_HEADING_CHARS = 200


def same_heading(a: str, b: str) -> bool:
    """Whether two headings read the same (case and runs of whitespace aside): a title and its page's h1."""
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def document_sections(doc: Document, spans: Sequence[Span]) -> list[str]:
    """The section paths of a document's passages: :func:`section_paths` of its headings, under its title for a
    file without a level-1 heading.

    Documentation sites often keep a page's title outside the page (mkdocs' nav, a front-matter ``title:``, the
    file name, which is then the title the loader gives): without it every passage of such a page stands under
    its subheadings alone, and the page's topic reaches no passage before its first one. A text added through the
    API keeps the headings its text has: its caller chose its title and what is embedded.
    """
    top = any(h.level == 1 for h in doc.headings)
    root = doc.title if doc.source == "file" and not top else ""
    return section_paths(doc.headings, spans, root)


def section_paths(headings: Sequence[Heading], spans: Sequence[Span], root: str = "") -> list[str]:
    """Each span's section path: the headings in force where it starts (the last one of each level above it, a
    heading ending the sections of its level and deeper), outermost first, joined by :data:`SEPARATOR`, after
    ``root`` where one is given; ``""`` where none.

    ``headings`` and ``spans`` are in text order (as loaders and the splitter give them).
    """
    out: list[str] = []
    stack: list[Heading] = [Heading(0, 0, root)] if root.strip() else []
    pending = iter(headings)
    upcoming = next(pending, None)
    for span in spans:
        while upcoming is not None and upcoming.start <= span.start:
            while stack and stack[-1].level >= upcoming.level:
                stack.pop()
            stack.append(upcoming)
            upcoming = next(pending, None)
        out.append(SEPARATOR.join(_cut(h.text) for h in stack))
    return out


def passage_inputs(
    text: str, spans: Sequence[Span], sections: Sequence[str], context: str, limit: int
) -> list[str]:
    """What the encoder embeds for each passage of ``text``: the passage, preceded under ``context="section"`` by
    its section path (at most :data:`CONTEXT_CHARS` characters) where it has one and the two fit in ``limit``
    word pieces (the model's; special tokens included, as ``Span.n_tokens`` counts them)."""
    return [passage_input(text[span.start : span.end], section, span.n_tokens, context, limit)
            for span, section in zip(spans, sections or [""] * len(spans), strict=True)]


def passage_input(passage: str, section: str, n_tokens: int, context: str, limit: int) -> str:
    """What the encoder embeds for one passage of ``n_tokens`` word pieces under ``section``
    (:func:`passage_inputs`): made from what a stored passage keeps too, so an ingest can tell which stored
    vectors a new version of a document may keep (``ingest/reuse.py``)."""
    head = section[:CONTEXT_CHARS]
    if context == "section" and head and n_tokens + len(head) <= limit:
        return f"{head}\n{passage}"
    return passage


def shown_with_title(title: str, section: str) -> str:
    """A passage's place as one line: its document's title, then its section path without a first heading that
    only repeats the title."""
    parts = section.split(SEPARATOR) if section else []
    if parts and title and same_heading(parts[0], title):
        parts = parts[1:]
    return SEPARATOR.join([title, *parts] if title else parts)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_HEADING_CHARS else text[: MAX_HEADING_CHARS - 1] + "…"
