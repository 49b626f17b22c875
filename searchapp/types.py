"""Value objects that cross module seams: documents, passages, runs, hits, and what an encoder must offer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

from searchapp.clean import clean_text
from searchapp.errors import ConfigError
from searchapp.lines import SourceLines, breaks, source_line

if TYPE_CHECKING:
    import numpy as np  # annotations only: importing numpy costs a one-shot command ~0.15 s


@dataclass(frozen=True)
class Heading:
    """A heading of a document: where its line starts in the document's text (a character offset), its level
    (1 for a title-level heading, up to 6) and its text as a reader sees it (markup and anchors stripped)."""

    start: int
    level: int
    text: str


@dataclass(frozen=True)
class Document:
    """A loaded file or an added text: its full text and identity.

    ``path`` is the file's absolute path, or the id a text was added with; ``mtime`` is seconds since the epoch
    (0 for texts); ``sha256`` is the hex digest of the file's bytes (of the UTF-8 text for texts); ``metadata``
    a JSON-serialisable mapping; ``source`` ``"file"`` or ``"text"``; ``headings`` the document's headings in
    text order (empty where its format has none), from which each passage's section path is taken.
    """

    path: str
    title: str
    text: str
    mtime: float
    size: int
    sha256: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: str = "file"
    headings: tuple[Heading, ...] = ()
    # Where its text's lines are not its file's (HTML): ``(offset, line)`` pairs, the file's line of the text from
    # each offset on (lines.py, "where a passage stands in its file"); ``None`` where they are. A paged format's
    # (PDF) page starts, offsets into ``text``.
    source_lines: SourceLines | None = None
    pages: tuple[int, ...] = ()


@dataclass(frozen=True)
class Span:
    """A passage's character span into its document's text: ``text[start:end]``."""

    start: int
    end: int
    n_tokens: int


def known_fields(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The items of ``data`` that are fields ``cls`` (a dataclass) takes when it is made: a JSON form read by a
    version older than the one that wrote it (a client of a newer server) leaves the fields it does not know."""
    names = {f.name for f in fields(cls) if f.init}
    return {k: v for k, v in data.items() if k in names}


@dataclass(frozen=True)
class Snippet:
    """The window of a passage shown for a hit: ``[start, end)`` and the words matching the query ``[s, e)``
    inside it, all in character offsets into the document's text (``query/snippets.py`` chooses them)."""

    start: int
    end: int
    highlights: tuple[tuple[int, int], ...] = ()

    def to_dict(self) -> dict[str, object]:
        """The stable JSON form documented in docs/cli.md."""
        return {"start": self.start, "end": self.end, "highlights": [[s, e] for s, e in self.highlights]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Snippet:
        """The inverse of :meth:`to_dict`."""
        return cls(int(data["start"]), int(data["end"]), tuple((int(s), int(e)) for s, e in data["highlights"]))


@dataclass(frozen=True)
class Explanation:
    """Why a hit ranks where it does: both raw scores (cosine, BM25), both as the fusion normalised them over the
    query's candidates, the dense weight the fusion gave this query and why, and the query terms the passage
    holds. Scores a mode did not compute are ``None``; so are the normalised scores and weight of RRF (it fuses
    ranks) and of a single-side mode."""

    dense: float | None
    lexical: float | None
    dense_normalised: float | None
    lexical_normalised: float | None
    dense_weight: float | None
    fusion: str  # the method and its settings in a few words, or the mode's name outside hybrid
    reason: str
    matched_terms: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """The stable JSON form documented in docs/cli.md."""
        return {
            "dense": self.dense, "lexical": self.lexical, "dense_normalised": self.dense_normalised,
            "lexical_normalised": self.lexical_normalised, "dense_weight": self.dense_weight, "fusion": self.fusion,
            "reason": self.reason, "matched_terms": list(self.matched_terms),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Explanation:
        """The inverse of :meth:`to_dict` (fields a newer server added are left out)."""
        return cls(**{**known_fields(cls, data), "matched_terms": tuple(data["matched_terms"])})


# The forms of a hit's text, declared once for every surface (``query --text``, the HTTP API's and MCP's ``text``,
# the adapters' ``text``): ``exact`` is the document's ``text[start:end]`` as stored (markup blanked to spaces, so
# that the offsets index it), ``clean`` the same passage for a prompt (clean.py: blanks collapsed, include
# directives' lines dropped; the offsets are not its).
TextForm = Literal["exact", "clean"]
TEXT_FORMS: tuple[TextForm, ...] = get_args(TextForm)
# The form a hit's JSON carries unless asked: exact on the command line, over HTTP and in the adapters (the offsets
# index it, and a consumer of ``text`` from before the forms keeps working); clean for an agent over MCP, which pays
# for every character and wants the text, not the offsets.
EXACT: TextForm = "exact"
CLEAN: TextForm = "clean"


def check_text_form(form: str) -> TextForm:
    """``form`` if it names one of :data:`TEXT_FORMS`, else ``ConfigError``."""
    if form not in TEXT_FORMS:
        raise ConfigError(f"text {form!r}: use {' or '.join(TEXT_FORMS)}")
    return form  # type: ignore[return-value]


@dataclass(frozen=True)
class Hit:
    """One ranked search result.

    ``score`` is the score of the last ranking stage that scored the passage (the mode's, or a rerank stage's);
    ``scores`` every stage's score by its name (``lexical``, ``dense``, ``fused``, ``rerank``: query/ranking.py);
    ``dense_score`` (cosine) and ``lexical_score`` (BM25) are the raw scores of each side, ``None`` where the
    mode did not compute them. ``path`` is the document's path, or
    the id of a text added through the API, and ``source`` says which (``"file"`` or ``"text"``: a text id may
    look like a relative path, never like an absolute one); ``start``/``end`` the passage's span in the
    document's text; ``section`` the headings it sits under (``"Concepts > Fields"``, ``""`` for none);
    ``metadata`` the document's metadata; ``snippet`` the window of the passage that best shows the query's
    terms; ``explain`` why it ranks there, when asked. ``line``/``column`` are where the passage starts in the
    document's text and ``end_line``/``end_column`` where it ends (the place of ``end``, just past its last
    character), from 1, columns in characters, a line ending at ``\\n``, ``\\r\\n`` or ``\\r``; ``None`` for a
    passage of an index from before they were recorded (until its file is read again), or from an older server.
    Where the passage's text's lines are not its file's (HTML lays its text out anew), ``source_lines`` says from
    which offset of ``text`` on it is on which line of the file (``(offset, line)`` pairs, the first at offset 0);
    ``line`` and ``end_line`` are then the file's lines of its first and last characters, and ``column`` and
    ``end_column`` ``None`` (a column of the file is not recorded). ``page`` is the page (from 1) a passage of a
    paged format (PDF) starts on, ``None`` for other formats; its ``line`` counts the lines of the text the index
    made of the pages (a blank line between two pages).
    ``clean_text`` is ``text`` for a prompt: markup blanks collapsed, include directives' lines dropped
    (``clean.py``; its offsets are not the document's, ``start``/``end`` are ``text``'s); :meth:`text_as` gives
    either by its form (:data:`TextForm`), and the JSON form (:meth:`to_dict`) carries the one asked.
    """

    rank: int
    score: float
    passage_id: int
    path: str
    title: str
    start: int
    end: int
    text: str
    dense_score: float | None = None
    lexical_score: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: str = "file"  # with a default: hits made before it existed (an older server's JSON) still load
    snippet: Snippet | None = None
    explain: Explanation | None = None
    # Grouped by document: the ids of the document's other passages in the ranking, best first (None ungrouped).
    other_passages: tuple[int, ...] | None = None
    # The headings the passage sits under, outermost first, joined by " > " ("" for none, or an older server).
    section: str = ""
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    # The text for a prompt (clean.py): computed from ``text`` when not given (the JSON carries one text; an
    # older server's gave both, and its clean_text is kept).
    clean_text: str = ""
    # Every ranking stage's score of the passage by the stage's name (query/ranking.py: "lexical", "dense",
    # "fused", "rerank"), in stage order; empty from an older server.
    scores: Mapping[str, float] = field(default_factory=dict)
    # Where its text's lines are not its file's: (offset into text, the file's line from there on) pairs.
    source_lines: SourceLines | None = None
    page: int | None = None

    # The document's line holding the most distinct query words the snippet marks (the first such line; the
    # snippet's first line where it marks none): where an editor should open, as ``grep -n`` reports a match.
    # ``None`` where ``line`` is.
    match_line: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if not self.clean_text:
            object.__setattr__(self, "clean_text", clean_text(self.text))
        if self.source_lines:
            object.__setattr__(self, "match_line", source_line(self.source_lines, self._match_offset()))
        elif self.line is not None:
            object.__setattr__(self, "match_line", self.line + breaks(self.text[: self._match_offset()]))

    def _match_offset(self) -> int:
        """Where, in ``text``, the first marked word of the line with the most distinct query words the snippet
        marks is (the first such line; the snippet's start where it marks none)."""
        snip = self.snippet
        if snip is None:
            return 0
        if not snip.highlights:
            return max(0, snip.start - self.start)
        words: dict[int, set[str]] = {}
        marked: dict[int, int] = {}  # each line's first marked word
        for s, e in snip.highlights:
            at, end = max(0, s - self.start), max(0, e - self.start)
            first = max(self.text.rfind("\n", 0, at), self.text.rfind("\r", 0, at)) + 1
            words.setdefault(first, set()).add(self.text[at:end].casefold())
            marked[first] = min(marked.get(first, at), at)
        return marked[max(words, key=lambda first: (len(words[first]), -first))]

    def text_as(self, form: str) -> str:
        """The passage's text in ``form`` (one of :data:`TEXT_FORMS`): ``text`` (exact) or ``clean_text``."""
        return self.clean_text if check_text_form(form) == CLEAN else self.text

    def to_dict(self, text: str = EXACT) -> dict[str, object]:
        """The stable JSON form documented in docs/cli.md: the passage's one ``text`` in the form ``text`` names
        (:data:`TEXT_FORMS`), and that form as ``text_form``."""
        return {
            "rank": self.rank,
            "score": self.score,
            "dense_score": self.dense_score,
            "lexical_score": self.lexical_score,
            "passage_id": self.passage_id,
            "path": self.path,
            "source": self.source,
            "title": self.title,
            "section": self.section,
            "start": self.start,
            "end": self.end,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "match_line": self.match_line,
            "page": self.page,
            "source_lines": None if self.source_lines is None else [list(p) for p in self.source_lines],
            "text": self.text_as(text),
            "text_form": text,
            "metadata": dict(self.metadata),
            "snippet": self.snippet.to_dict() if self.snippet else None,
            "explain": self.explain.to_dict() if self.explain else None,
            "other_passages": None if self.other_passages is None else list(self.other_passages),
            "scores": dict(self.scores),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Hit:
        """A hit from its JSON form (:meth:`to_dict`, or an HTTP response's); fields it does not know (a newer
        server's: new fields may be added to the JSON, docs/cli.md) are left out, fields it lacks (a server older
        than them) take their defaults. The text must be the exact one
        (``text_form`` ``"exact"``, or none: an older server's, which also gave ``clean_text``): a clean text is
        refused (``ValueError``), for neither the offsets nor the clean text itself would hold for it."""
        form = data.get("text_form", EXACT)
        fields_ = known_fields(cls, data)  # match_line among those left out: it is derived from the others
        if form != EXACT:
            raise ValueError(f"a hit's JSON with a {form} text cannot be loaded: ask for the exact text")
        if fields_.get("snippet") is not None:
            fields_["snippet"] = Snippet.from_dict(fields_["snippet"])
        if fields_.get("explain") is not None:
            fields_["explain"] = Explanation.from_dict(fields_["explain"])
        if fields_.get("other_passages") is not None:
            fields_["other_passages"] = tuple(fields_["other_passages"])
        if fields_.get("source_lines") is not None:
            fields_["source_lines"] = tuple((int(o), int(n)) for o, n in fields_["source_lines"])
        return cls(**fields_)


# A ranking: ``(passage_id, score)`` pairs, best first.
Run = list[tuple[int, float]]
# The largest whole number anything takes (a search option, a passage id, an offset, a character position): a
# signed 64-bit integer, what SQLite, PostgreSQL's bigint and FAISS's ids hold. A larger one is refused where it
# comes in (setting.whole), naming this bound, instead of overflowing deep down.
MAX_WHOLE = 2**63 - 1
# PostgreSQL's text holds no NUL character, SQLite's does: an id, title, text or metadata string with one is
# refused on every backend (``Index.add_texts``), and a lookup or filter value with one matches nothing.
NUL = "\x00"


def names_no_document(key: str) -> bool:
    """Whether ``key`` cannot be a stored key, so that a lookup by it finds nothing without asking a database: it
    holds a NUL (``NUL``), or a lone surrogate that no database's text can hold (a JSON ``"\\ud800"``)."""
    if NUL in key:
        return True
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
# The lowest score each side can give: cosine of opposite vectors; BM25 of a passage sharing no query term.
COSINE_MIN = -1.0
BM25_MIN = 0.0


@dataclass(frozen=True)
class ExportedDocument:
    """One document as ``searchapp export`` writes it: path (or text id), source, title, metadata, size in bytes,
    the file's modification time when indexed (0 for texts), its content's SHA-256 and when it was indexed (Unix
    seconds, UTC; ``None`` for a document indexed before searchapp recorded it)."""

    path: str
    source: str
    title: str
    metadata: dict[str, Any]
    size: int
    mtime: float
    sha256: str
    indexed_at: float | None = None

    def to_dict(self) -> dict[str, object]:
        """The stable JSON line documented in docs/cli.md (``type`` first)."""
        return {"type": "document", "path": self.path, "source": self.source, "title": self.title,
                "metadata": self.metadata, "size": self.size, "mtime": self.mtime, "sha256": self.sha256,
                "indexed_at": self.indexed_at}


@dataclass(frozen=True)
class ExportedPassage:
    """One passage as ``searchapp export`` writes it: its id, its document's path (or text id), its character
    span in the document's text, its text, (when asked for) its stored float32 vector ``(d,)``, and its section
    path (``""`` for none)."""

    id: int
    path: str
    start: int
    end: int
    text: str
    vector: np.ndarray | None = None
    section: str = ""

    def to_dict(self) -> dict[str, object]:
        """The stable JSON line documented in docs/cli.md; ``vector`` only when it was exported."""
        row: dict[str, object] = {"type": "passage", "id": self.id, "path": self.path, "section": self.section,
                                  "start": self.start, "end": self.end, "text": self.text}
        if self.vector is not None:
            # float32 -> the double of the same value: reads back to the identical float32.
            import numpy as np

            row["vector"] = self.vector.astype(np.float32).tolist()
        return row


@dataclass(frozen=True)
class DocumentIdentity:
    """A stored document's identity: path (or text id), title, ``source`` (``"file"`` or ``"text"``), metadata and
    the length of its text in characters."""

    path: str
    title: str
    source: str
    metadata: dict[str, Any]
    n_chars: int

    def info_dict(self) -> dict[str, object]:
        """These fields as JSON."""
        return {"path": self.path, "title": self.title, "source": self.source, "metadata": dict(self.metadata),
                "n_chars": self.n_chars}


@dataclass(frozen=True)
class DocumentText(DocumentIdentity):
    """A window ``[start, end)`` of a document's text, rebuilt from its passages (:meth:`Index.document`).

    ``text`` has exactly ``end - start`` characters, so a passage's offsets index it (``text[p.start - start:
    p.end - start]``); whitespace between passages is not stored and stands as spaces holding the line breaks it
    held, so that the text's lines are the document's (``store/rebuild.py``; spaces ending in one line break where
    an older index did not record its passages' lines). ``passages`` are the ``(passage_id, start, end)`` of the
    passages in the window.
    """

    start: int = 0
    end: int = 0
    text: str = ""
    passages: list[tuple[int, int, int]] = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        """Whether text lies outside the window."""
        return self.start > 0 or self.end < self.n_chars

    def to_dict(self) -> dict[str, object]:
        """The JSON form served by ``GET /documents/{id}``."""
        return {
            **self.info_dict(), "start": self.start, "end": self.end, "truncated": self.truncated, "text": self.text,
            "passages": [{"passage_id": i, "start": s, "end": e} for i, s, e in self.passages],
        }


@dataclass(frozen=True)
class PassageContext(DocumentIdentity):
    """A passage with up to ``chars`` characters of its document's text on each side (:meth:`Index.context`).

    ``before`` is the text of ``[start - len(before), start)``, ``after`` of ``[end, end + len(after))``, rebuilt
    from the neighbouring passages as in :class:`DocumentText`. ``line``, ``column``, ``end_line`` and
    ``end_column`` are where the passage starts and ends, and ``source_lines`` and ``page`` where it stands in its
    file, as a hit's (:class:`Hit`; ``None`` where not recorded).
    """

    passage_id: int = 0
    start: int = 0
    end: int = 0
    before: str = ""
    text: str = ""
    after: str = ""
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    source_lines: SourceLines | None = None
    page: int | None = None

    def to_dict(self) -> dict[str, object]:
        """The JSON form served by ``GET /passages/{id}/context``."""
        return {
            "passage_id": self.passage_id, **self.info_dict(), "start": self.start, "end": self.end,
            "line": self.line, "column": self.column, "end_line": self.end_line, "end_column": self.end_column,
            "page": self.page,
            "source_lines": None if self.source_lines is None else [list(p) for p in self.source_lines],
            "before": self.before, "text": self.text, "after": self.after,
        }


class EncoderLike(Protocol):
    """What an index needs of an encoder (tests pass a deterministic fake)."""

    @property
    def dimension(self) -> int: ...

    def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray:
        """float32 ``(len(texts), dimension)`` unit vectors; ``truncate`` cuts over-long texts (queries)."""
        ...
