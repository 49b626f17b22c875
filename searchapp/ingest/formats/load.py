"""One file read, within the size limits, and handed to its format's loader: a :class:`~searchapp.types.Document`,
or a :class:`~searchapp.errors.LoadError` with a one-line reason."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import replace
from pathlib import Path

from searchapp.errors import LoadError
from searchapp.ingest.formats.decoding import SNIFF_BYTES, decode_text, normalise_newlines
from searchapp.ingest.formats.format import clean_title, mb
from searchapp.ingest.formats.parsers import quiet_parsers
from searchapp.ingest.formats.registry import format_for
from searchapp.lines import SourceLines
from searchapp.setting import DEFAULT_FILE_MB
from searchapp.types import Document

# Files larger than this are refused before they are read (searchapp ingest --max-file-mb).
MAX_FILE_BYTES = DEFAULT_FILE_MB * 2**20


def max_chars(max_bytes: int) -> int:
    """The most characters of text a file may load as, whatever its format: what a plain text file of
    ``max_bytes`` could hold (every character takes at least one byte). A package's parts decompress and its
    markup expands (a slide listed many times, a run of spaces written as a count): without this bound a small
    file could load as gigabytes of text for the splitter and the encoder."""
    return max_bytes


def without_nul(text: str) -> str:
    """``text`` with each NUL character read as a space: the same length, so every offset into it stays exact.
    PostgreSQL's text cannot hold NUL (a file's write would fail, and its group's with it), and a NUL is no part
    of a word: both backends store the same text. A file's first bytes with a NUL are refused as binary before;
    this is for a NUL further on, or one a format's loader gives (a PDF's text layer)."""
    return text.replace("\x00", " ")


def load_document(path: Path, max_bytes: int = MAX_FILE_BYTES, notes: list[str] | None = None) -> Document:
    """Read and parse one file; raises :class:`LoadError` with a one-line reason when it cannot.

    A file over ``max_bytes`` is refused before it is read, and one whose text is longer than :func:`max_chars`
    after it is loaded; both count as skipped, too large. Text formats are sniffed for binary content on
    their first bytes before the rest is read. The parsers' own log lines never reach the user
    (:func:`~searchapp.ingest.formats.parsers.quiet_parsers`); when a file was read despite problems its parser
    reported (a malformed PDF repaired on the fly), one line saying so is appended to ``notes``.
    """
    name = str(path)
    # Checked before reading so that a large unsupported file is never read.
    found = format_for(path)
    if found is None:
        suffix = f"'{path.suffix.lower()}'" if path.suffix else "(no suffix)"
        raise LoadError(name, f"unsupported file type {suffix}")
    try:
        # Opening a FIFO or device would block or never end; only regular files are read.
        if not stat.S_ISREG(path.stat().st_mode):
            raise LoadError(name, "not a regular file")
        with path.open("rb") as handle:
            # fstat on the open handle so that size and mtime describe the bytes actually read.
            info = os.fstat(handle.fileno())
            if info.st_size > max_bytes:
                raise LoadError(name, f"{mb(info.st_size)} is over the {mb(max_bytes)} limit (--max-file-mb)",
                                skipped="too_large")
            head = handle.read(SNIFF_BYTES)
            if found.is_text and head:
                decode_text(head, name)  # binary content is refused before the rest is read
            # As much as the file holds and one byte more (a read reserves its whole length: the limit's would
            # fail under a memory cap for an 18-byte file), then, only if it grew meanwhile, up to one byte past
            # the limit: a file growing while it is read is still bounded.
            data = head + handle.read(max(0, min(info.st_size, max_bytes) + 1 - len(head)))
            if len(data) > info.st_size:
                data += handle.read(max(0, max_bytes + 1 - len(data)))
            if len(data) > max_bytes:
                raise LoadError(name, f"over the {mb(max_bytes)} limit (--max-file-mb)", skipped="too_large")
    except OSError as exc:
        raise LoadError(name, f"cannot read: {exc.strerror or exc}") from exc
    except MemoryError as exc:
        raise LoadError(name, "out of memory reading it") from exc
    if not data:
        raise LoadError(name, "empty file", no_text=True, skipped="empty")
    try:
        with quiet_parsers(found.loggers) as problems:
            loaded = found.loader(path, data)
    except MemoryError as exc:  # one file too large for this machine's memory is that file's failure only
        raise LoadError(name, "out of memory parsing it") from exc
    if problems and notes is not None:
        first = problems[0].strip().splitlines()[0][:200] if problems[0].strip() else "unnamed problem"
        more = f", and {len(problems) - 1} more" if len(problems) > 1 else ""
        notes.append(f"malformed {path.suffix.lower().lstrip('.').upper() or 'file'}, read as far as possible "
                     f"(the parser reported: {first}{more}); its text may be incomplete")
    limit = max_chars(max_bytes)
    if len(loaded.text) > limit:
        raise LoadError(name, f"its text is {len(loaded.text):,} characters, more than the {limit:,} a plain text "
                              "file of the size limit could hold (--max-file-mb)", skipped="too_large")
    # Normalised again so that every loader, including one not built in, gives "\n"-only offsets.
    text = without_nul(normalise_newlines(loaded.text))
    if not text.strip():
        raise LoadError(name, "no text", no_text=True, skipped="empty")
    title = clean_title(without_nul(loaded.title) if isinstance(loaded.title, str) else None) or path.stem
    digest = hashlib.sha256(data).hexdigest()
    # A loader's headings index its text; any that do not (a loader not built in) are dropped.
    headings = tuple(replace(h, text=without_nul(h.text)) for h in loaded.headings
                     if 0 <= h.start < len(text) and 1 <= h.level <= 6 and h.text)
    return Document(str(path.resolve()), title, text, info.st_mtime, info.st_size, digest,
                    headings=tuple(sorted(headings, key=lambda h: h.start)),
                    source_lines=_checked_source_lines(loaded.source_lines, len(text)),
                    pages=_checked_pages(loaded.pages, len(text)))


def _checked_source_lines(pairs: object, n: int) -> SourceLines | None:
    """A loader's source lines where they index its text (its offsets ascending from 0, lines from 1), else
    ``None`` (a loader not built in may give anything): a hit then gives the text's own lines."""
    if not pairs or not isinstance(pairs, tuple):
        return None
    try:
        out = tuple((int(at), int(line)) for at, line in pairs)
    except (TypeError, ValueError):
        return None
    if out[0][0] != 0 or any(line < 1 for _, line in out) or any(
            not a[0] < b[0] < n for a, b in zip(out, out[1:], strict=False)):
        return None
    return out


def _checked_pages(pages: object, n: int) -> tuple[int, ...]:
    """A loader's page starts where they index its text (ascending from 0), else none."""
    if not pages or not isinstance(pages, tuple) or not all(isinstance(p, int) for p in pages):
        return ()
    ok = pages[0] == 0 and all(a <= b <= n for a, b in zip(pages, pages[1:], strict=False))
    return pages if ok else ()
