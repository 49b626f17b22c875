"""``searchapp show``: a passage in the lines around it, or a whole document, with a query's words marked: a file's
own lines, read from disk while it is the file indexed and its reader kept its offsets (:func:`file_text`), else
the text as the index holds it (a file changed since, or one whose text is extracted).

It reads through the calls the HTTP API's ``GET /passages/{id}/context`` and ``GET /documents/{id}`` make
(``Index.context``, ``Index.document``) and marks words as their ``q`` does (``query/snippets.highlights``).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from searchapp.cli.common import color_stdout, emit_json, errors, place, say, shown_key, styled
from searchapp.cli.help import examples
from searchapp.cli.options import DEFAULT_INDEX, IndexOpt, JsonOpt
from searchapp.errors import ConfigError, DocumentNotFoundError, LoadError
from searchapp.lines import BREAK, breaks, source_line
from searchapp.paths import own_path
from searchapp.setting import MAX_CONTEXT_CHARS
from searchapp.types import MAX_WHOLE, DocumentText, PassageContext

if TYPE_CHECKING:
    from searchapp.index import Index

DEFAULT_CONTEXT_LINES = 3
_PASSAGE_ID = re.compile(r"[0-9]+")


def register(app: typer.Typer) -> None:
    """Add ``show`` to ``app``."""
    app.command(epilog=examples(
        "searchapp show 1234  # a hit's passage_id, in its lines",
        "searchapp show docs/config.rst --query 'secure cookie'",
    ))(show)


@dataclass(frozen=True)
class Shown:
    """What ``show`` prints: ``text``, the characters ``[start, end)`` of a document, whose first line is the
    document's line ``line`` (``None`` where the index did not record its lines, or where the passage's lines are
    not its file's: HTML, whose passage lines are numbered by their ``source_lines``), the words of ``query`` in it
    (``highlights``, document offsets) and, for a passage, the passage."""

    path: str
    source: str
    title: str
    n_chars: int
    start: int
    text: str
    line: int | None
    highlights: tuple[tuple[int, int], ...]
    passage: PassageContext | None = None
    read_from: str = "index"  # "file": the file on disk, unchanged since it was indexed; "index": the stored text

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form documented in docs/cli.md."""
        p = self.passage
        return {
            "path": self.path, "source": self.source, "title": self.title, "n_chars": self.n_chars,
            "start": self.start, "end": self.end, "line": self.line,
            "end_line": None if self.line is None else self.line + breaks(self.text), "text": self.text,
            "passage": None if p is None else {
                "passage_id": p.passage_id, "start": p.start, "end": p.end, "line": p.line, "column": p.column,
                "end_line": p.end_line, "end_column": p.end_column, "page": p.page,
                "source_lines": None if p.source_lines is None else [list(x) for x in p.source_lines],
            },
            "highlights": [[s, e] for s, e in self.highlights],
            "read_from": self.read_from,
        }


def show(
    target: Annotated[str, typer.Argument(
        help="A passage id (a hit's passage_id), or an indexed file's path (or a text's id) for the whole document.",
        show_default=False)],
    index: IndexOpt = DEFAULT_INDEX,
    context: Annotated[int, typer.Option(
        "--context", "-C", min=0, max=MAX_WHOLE, metavar="N",
        help=f"Lines shown before and after a passage (up to {MAX_CONTEXT_CHARS:,} characters each side).",
    )] = DEFAULT_CONTEXT_LINES,
    query: Annotated[str | None, typer.Option(
        "--query", help="Mark this query's words, as a hit's snippet marks them (bold on a terminal).")] = None,
    text_id: Annotated[bool, typer.Option(
        "--text", help="TARGET is a text's id, never a file's path (for an id that names a file here too).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Print a passage with the lines around it, or a whole document, as the index holds it."""
    from searchapp.index import Index
    from searchapp.query.snippets import QueryTerms, highlights

    passage: PassageContext | None = None
    disk: str | None = None
    with errors(), Index(index) as ix:
        doc: PassageContext | DocumentText
        if _PASSAGE_ID.fullmatch(target) and not text_id:
            # Digits past any passage id's length are not parsed at all (Python refuses over 4,300 of them).
            if len(target) > len(str(MAX_WHOLE)):
                raise ConfigError(f"passage id {target[:20]}... has {len(target):,} digits: a passage id is a whole "
                                  f"number in [1, {MAX_WHOLE}]")
            doc = passage = ix.context(int(target), chars=MAX_CONTEXT_CHARS, lines=context)
            text, start = passage.before + passage.text + passage.after, passage.start - len(passage.before)
            known = passage.line is not None and passage.source_lines is None
            line = passage.line - breaks(passage.before) if known else None
        else:
            doc = _document(ix, target, text_id)
            text, start, line = doc.text, doc.start, 1
        if doc.source == "file":
            disk = file_text(ix.stores.document_sha256(doc.path), doc.path, doc.n_chars)
            if disk is not None:  # the same characters at the same offsets, as written: markup and all
                text = disk[start : start + len(text)]
        marks = highlights(QueryTerms(query), text, start, doc.n_chars) if query else ()
    shown = Shown(doc.path, doc.source, doc.title, doc.n_chars, start, text, line, marks, passage,
                  "file" if disk is not None else "index")
    if as_json:
        emit_json(shown.to_dict())
    else:
        _print(shown)
        if doc.source == "file" and disk is None:
            say("(as indexed: the file has changed since, or its text is extracted from its format; markup shows "
                "as blanks)", err=True)


# The largest file ``show`` reads from disk to print its own lines (a bigger one prints as indexed).
MAX_SHOWN_FILE_BYTES = 64 * 2**20


def file_text(recorded_sha256: str | None, path: str, n_chars: int) -> str | None:
    """The text of the file at ``path`` as written, where it is still the file indexed (its sha256 the recorded
    one) and its reader kept its characters' offsets (the same length: plain text, Markdown, reStructuredText and
    the other markup readers blank markup in place), else ``None`` (changed since, or a format whose text is
    extracted: HTML, PDF, Word). Read with the ingest's own decoding."""
    # Imported here: the readers' registry is not what `searchapp --help` should load.
    from searchapp.ingest.formats.decoding import decode_text
    from searchapp.ingest.formats.load import without_nul

    if recorded_sha256 is None:
        return None
    try:
        if os.path.getsize(path) > MAX_SHOWN_FILE_BYTES:
            return None
        with open(path, "rb") as f:
            data = f.read(MAX_SHOWN_FILE_BYTES + 1)
        if hashlib.sha256(data).hexdigest() != recorded_sha256:
            return None
        text = without_nul(decode_text(data, path))
    except (OSError, LoadError):
        return None
    return text if len(text) == n_chars else None


def _document(ix: Index, target: str, text_id: bool = False) -> DocumentText:
    """The whole document ``target`` names: a text's id (with ``text_id``), else a file's path or a text's id. A
    path that exists names that file only, as ``query --path-prefix`` takes it (a text's id may look like a
    relative path, and an unindexed file must not show a text in its place); it is looked up as an ingest keys it,
    its folders' links resolved (a file reached through a linked parent folder). A path that does not exist may
    be a text's id, or a file's path as stored or relative to the working folder (the file may be gone: the index
    is read, not the disk)."""
    given = os.path.abspath(target)
    if text_id:
        keys: tuple[str, ...] = (target,)
    elif os.path.lexists(target):
        keys = (own_path(given), given)
    else:
        keys = (target, own_path(given), given)
    for key in dict.fromkeys(keys):
        try:
            return ix.document(key)
        except DocumentNotFoundError:
            continue
    if text_id:
        raise DocumentNotFoundError(f"no text has the id {target!r}")
    if os.path.lexists(target):
        raise DocumentNotFoundError(f"{target!r} is a file that is not in the index (for a text of that id: "
                                    "searchapp show --text ID)")
    raise DocumentNotFoundError(f"{target!r} is not in the index: give a passage id (a hit's passage_id), an "
                                "indexed file's path or a text's id")


def _lines(text: str, cut: bool) -> Iterator[tuple[int, int]]:
    """``[start, end)`` of each line of ``text`` (its line break left out). A final line break ends the last line,
    as in a file, unless the text was ``cut`` there (before the break of an empty line that follows)."""
    at = 0
    for m in BREAK.finditer(text):
        yield at, m.start()
        at = m.end()
    if at < len(text) or cut:
        yield at, len(text)


def _print(shown: Shown) -> None:
    """The text line by line, its marks bold on a terminal (nothing added elsewhere: piped output is the text). A
    passage's lines are numbered, as ``grep -n -C``: ``N:`` for the passage's lines, ``N-`` for its context."""
    p, color = shown.passage, color_stdout()
    if p is not None:
        where = place(p.line, p.page) + (f":{p.column}" if p.column is not None and p.page is None else "")
        say(f"{shown_key(shown.path, shown.source)}{where}  passage {p.passage_id}")
    first = shown.line if p is not None else None  # a whole document is printed as it is, unnumbered
    width = len(str(first + breaks(shown.text))) if first is not None else 0
    mapped = p.source_lines if p is not None else None  # the passage's lines numbered as the file's, the rest not
    if mapped:
        width = len(str(max(n for _, n in mapped)))
    marks = list(shown.highlights)
    j = 0  # the first mark not yet behind the line being printed (marks are in text order, none spans a line)
    for n, (lo, hi) in enumerate(_lines(shown.text, cut=shown.end < shown.n_chars)):
        a, b = shown.start + lo, shown.start + hi
        while j < len(marks) and marks[j][1] <= a:
            j += 1
        pieces: list[tuple[str, bool]] = []
        at, k = a, j
        while k < len(marks) and marks[k][0] < b:
            s, e = max(marks[k][0], at), min(marks[k][1], b)
            pieces += [(shown.text[at - shown.start : s - shown.start], False),
                       (shown.text[s - shown.start : e - shown.start], True)]
            at, k = e, k + 1
        pieces.append((shown.text[at - shown.start : b - shown.start], False))
        gutter = ""
        inside = p is not None and b >= p.start and a < p.end
        if p is not None and mapped:
            number = str(source_line(mapped, max(a, p.start) - p.start)) if inside else ""
            gutter = f"{number:>{width}}{':' if inside else '-'} "
        elif p is not None and first is not None:
            gutter = f"{first + n:>{width}}{':' if inside else '-'} "
        typer.echo(gutter + styled(pieces, color, layout=True))
