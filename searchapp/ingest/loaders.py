"""Turn files into :class:`~searchapp.types.Document` objects, and find the files worth loading.

Every loaded text has its line endings normalised to ``"\\n"``: passage offsets are into that normalised
text, not into the bytes on disk. Parsers (pypdf, python-docx, BeautifulSoup, charset_normalizer) are imported
inside the functions that use them so that importing this module, and thus ``searchapp --help``, stays cheap.
"""

from __future__ import annotations

import codecs
import fnmatch
import hashlib
import io
import logging
import os
import re
import stat
import warnings
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from searchapp.errors import LoadError
from searchapp.ingest import markup
from searchapp.types import Document, Heading

if TYPE_CHECKING:
    from bs4 import BeautifulSoup
    from docx.document import Document as DocxDocument
    from docx.text.paragraph import Paragraph
    from pypdf import PdfReader


@dataclass(frozen=True)
class LoadedText:
    """What a loader extracts from a file: its text, when the format names one its title, and its headings
    (offsets into ``text``, in text order)."""

    text: str
    title: str | None
    headings: tuple[Heading, ...] = ()


Loader = Callable[[Path, bytes], LoadedText]

_REGISTRY: dict[str, Loader] = {}


def register(*suffixes: str) -> Callable[[Loader], Loader]:
    """Decorator registering a loader for the given suffixes (e.g. ``".md"``); a later registration wins."""
    if not suffixes or any(not s.startswith(".") or len(s) < 2 for s in suffixes):
        raise ValueError(f"suffixes must look like '.ext', got {suffixes!r}")

    def decorator(loader: Loader) -> Loader:
        for suffix in suffixes:
            _REGISTRY[suffix.lower()] = loader
        return loader

    return decorator


def loader_for(path: Path) -> Loader | None:
    """The loader for ``path``'s suffix (compared lower-case), or ``None`` when no loader claims it."""
    return _REGISTRY.get(path.suffix.lower())


def supported_suffixes() -> list[str]:
    """The registered suffixes, sorted."""
    return sorted(_REGISTRY)


_SNIFF_BYTES = 8192
# Files larger than this are refused before they are read (searchapp ingest --max-file-mb).
MAX_FILE_BYTES = 100 * 2**20
# What a zip-packaged file (DOCX, PPTX, ODT/ODP, EPUB) may decompress to, in all, and its number of parts: a few
# hundred kilobytes can hold gigabytes of XML (tests/integration/test_hostile_files.py).
MAX_ZIP_BYTES = 64 * 2**20
MAX_ZIP_PARTS = 10_000
# The longest HTML text parsed: the parser keeps tens of bytes per character.
MAX_HTML_CHARS = 32 * 2**20
_TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".html", ".htm", ".rst", ".adoc", ".asciidoc"})


def _mb(n: int) -> str:
    return f"{n / 2**20:.0f} MB" if n >= 2**20 else f"{n} bytes"
# C0 controls and DEL, minus the whitespace ones and ESC (ANSI colour codes are common in log files).
_CONTROL_BYTES = bytes([*range(0x00, 0x09), *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])
_MAX_CONTROL_SHARE = 0.10
# UTF-32 first: its little-endian BOM starts with the UTF-16 one. The codecs consume the BOM themselves.
_WIDE_BOMS = {
    "utf-32": (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE),
    "utf-16": (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE),
}
# charset_normalizer's "chaos" scores for short Western European text are nearly tied between cp1252 and
# cp1250/cp1257 and it often picks the wrong one ("très" -> "trčs"); within this margin cp1252 wins.
_CP1252_MARGIN = 0.1
_HIDDEN_HTML_TAGS = ["script", "style", "noscript", "template", "title"]
_BLOCK_HTML_TAGS = frozenset(
    "address article aside blockquote body caption dd details dialog div dl dt fieldset figcaption figure"
    " footer form h1 h2 h3 h4 h5 h6 header hr html li main nav ol p pre section summary table tbody td tfoot"
    " th thead tr ul".split()
)
_SPACES = re.compile(r"\s+")
_DOCX_HEADINGS = ("Heading", "Title")


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def decode_text(data: bytes, path: str) -> str:
    """Decode a text file's bytes to ``str`` with ``"\\r\\n"`` and ``"\\r"`` normalised to ``"\\n"``.

    A UTF-8 BOM is dropped; strict UTF-8 is tried first, then charset_normalizer's guess, then cp1252 with
    replacement characters. Raises :class:`LoadError` for content that looks binary.
    """
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    # UTF-16/32 text is full of NUL bytes, so it must be recognised before the binary check rejects it.
    for encoding, boms in _WIDE_BOMS.items():
        if data.startswith(boms):
            try:
                return _normalise_newlines(data.decode(encoding))
            except UnicodeDecodeError:
                break
    sample = data[:_SNIFF_BYTES]
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    if b"\x00" in sample or controls > _MAX_CONTROL_SHARE * len(sample):
        raise LoadError(path, "binary content, not text", no_text=True)
    try:
        return _normalise_newlines(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    matches = from_bytes(data)
    best = matches.best()
    if best is None:
        return _normalise_newlines(data.decode("cp1252", errors="replace"))
    near = (m for m in matches if m.encoding == "cp1252" and m.chaos <= best.chaos + _CP1252_MARGIN)
    return _normalise_newlines(str(next(near, best)))


@contextmanager
def _parser_errors(path: str, reason: str) -> Iterator[None]:
    """Turn what a third-party parser raises on malformed input into a one-line :class:`LoadError`.

    Wraps library calls only: parsers raise arbitrary types (KeyError, struct.error, zlib.error, ...) on bad
    input, so there is no narrower net. MemoryError says nothing about the file and is let through.
    """
    try:
        yield
    except (LoadError, MemoryError):
        raise
    except Exception as exc:
        message = str(exc).strip()
        detail = message.splitlines()[0][:200] if message else type(exc).__name__
        raise LoadError(path, f"{reason} ({detail})") from exc


# The loggers of the parsers we call. They log what they repair in a malformed file ("incorrect startxref
# pointer", "Ignoring wrong pointing object") as warnings that would reach the user's terminal, in their words,
# through logging's last-resort handler; they are captured while a file is parsed instead.
PARSER_LOGGERS = ("pypdf", "docx", "bs4", "charset_normalizer")


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def quiet_parsers() -> Iterator[list[str]]:
    """While the block runs, the parsers' log records (warning and above) are collected, not printed, and their
    ``warnings.warn`` calls (advice to programmers: "markup resembles a file name") are dropped. Yields the list
    the messages are collected into.

    Not for concurrent use from several threads: ``warnings`` filters are process-wide (an ingest parses in one
    thread; a Ray worker is a process of its own)."""
    capture = _Capture()
    saved = []
    for name in PARSER_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.propagate))
        logger.addHandler(capture)
        logger.propagate = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield capture.messages
    finally:
        for logger, propagate in saved:
            logger.removeHandler(capture)
            logger.propagate = propagate


def _clean_title(title: object) -> str | None:
    return (" ".join(title.split()) or None) if isinstance(title, str) else None


@register(".txt")
def _load_txt(path: Path, data: bytes) -> LoadedText:
    return LoadedText(decode_text(data, str(path)), None)


@register(".md", ".markdown")
def _load_markdown(path: Path, data: bytes) -> LoadedText:
    return _reading(markup.read_markdown(decode_text(data, str(path))))


@register(".rst")
def _load_rst(path: Path, data: bytes) -> LoadedText:
    return _reading(markup.read_rst(decode_text(data, str(path))))


@register(".adoc", ".asciidoc")
def _load_asciidoc(path: Path, data: bytes) -> LoadedText:
    return _reading(markup.read_asciidoc(decode_text(data, str(path))))


def _reading(reading: markup.Reading) -> LoadedText:
    """A marked-up text read as a reader sees it: markup blanked to spaces of the same length (offsets into the
    text are offsets into the decoded file), its headings and title."""
    return LoadedText(reading.text, _clean_title(reading.title), reading.headings)


@register(".html", ".htm")
def _load_html(path: Path, data: bytes) -> LoadedText:
    from bs4 import BeautifulSoup

    text = decode_text(data, str(path))
    if len(text) > MAX_HTML_CHARS:
        raise LoadError(str(path), f"HTML of {len(text):,} characters, over the {MAX_HTML_CHARS:,} parsed")
    with _parser_errors(str(path), "cannot parse HTML"):
        soup = BeautifulSoup(text, "html.parser")
    titles = (_clean_title(tag.get_text()) for tag in (soup.title, soup.find("h1")) if tag is not None)
    title = next((t for t in titles if t), None)
    # <title> is dropped too: it is not page content, and it is already kept as the title.
    for tag in soup.find_all(_HIDDEN_HTML_TAGS):
        tag.decompose()
    visible, headings = _html_visible_text(soup)
    return LoadedText(visible, title, headings)


# Noncharacters (never in interchange text) mark where a heading's text starts (one per level) and ends while
# the visible text is assembled; they are taken out, and their places recorded, once the text is laid out.
_HEADING_START = {f"h{n}": chr(0xFDD0 + n) for n in range(1, 7)}
_HEADING_END = "\uFDDF"
_SENTINELS = frozenset(_HEADING_START.values()) | {_HEADING_END}
_SENTINEL_RE = re.compile("[\uFDD1-\uFDD6\uFDDF]")
_EMPTY_HEADING = re.compile("[\uFDD1-\uFDD6]\uFDDF")


def _html_visible_text(soup: BeautifulSoup) -> tuple[str, tuple[Heading, ...]]:
    """Text as a browser lays it out, roughly: blocks on their own lines, whitespace collapsed elsewhere; and
    the h1-h6 headings, where their text landed."""
    from bs4.element import NavigableString, PageElement, PreformattedString, Tag

    pieces: list[str] = []
    # An explicit stack, not recursion: deeply nested markup must not hit the recursion limit.
    # ``None`` marks the end of a block element, a string the end of a heading.
    stack: list[PageElement | str | None] = [soup]
    while stack:
        node = stack.pop()
        if node is None:
            pieces.append("\n")
        elif isinstance(node, str) and not isinstance(node, NavigableString):
            pieces.append(node)
        elif isinstance(node, Tag):
            if node.name == "br":
                pieces.append("\n")
            elif node.name == "pre":
                pieces.append(f"\n{_SENTINEL_RE.sub('', node.get_text())}\n")
            else:
                if node.name in _BLOCK_HTML_TAGS:
                    pieces.append("\n")
                    stack.append(None)
                if node.name in _HEADING_START:
                    pieces.append(_HEADING_START[node.name])
                    stack.append(_HEADING_END)
                stack.extend(reversed(node.contents))
        elif isinstance(node, NavigableString) and not isinstance(node, PreformattedString):
            # PreformattedString covers comments, doctypes, CDATA and processing instructions.
            pieces.append(_SPACES.sub(" ", _SENTINEL_RE.sub("", str(node))))
    lines: list[str] = []
    starts = ""  # marks of headings starting on lines that hold nothing else: they go to the next line
    for line in _normalise_newlines("".join(pieces)).split("\n"):
        line = _strip_keeping_marks(line)
        if line and not line.strip("".join(_SENTINELS)):
            ends = len(line) - len(line.lstrip(_HEADING_END))
            if lines and not starts:
                lines[-1] += line[:ends]
            else:
                starts += line[:ends]
            starts += line[ends:]
            line = ""
        elif starts:
            line, starts = starts + line, ""
        lines.append(line)
    if starts:
        lines.append(starts)
    laid_out = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return _take_out_marks(laid_out)


def _strip_keeping_marks(line: str) -> str:
    """``line.strip()``, the heading marks among the stripped characters kept at the ends (an empty heading's
    pair dropped), so that stripping moves no mark into or out of its heading's text."""
    start, end = 0, len(line)
    while start < end and (line[start].isspace() or line[start] in _SENTINELS):
        start += 1
    while end > start and (line[end - 1].isspace() or line[end - 1] in _SENTINELS):
        end -= 1
    stripped = _marks(line[:start]) + line[start:end] + _marks(line[end:])
    while True:
        emptied = _EMPTY_HEADING.sub("", stripped)
        if emptied == stripped:
            return stripped
        stripped = emptied


def _marks(part: str) -> str:
    return "".join(c for c in part if c in _SENTINELS)


def _take_out_marks(marked: str) -> tuple[str, tuple[Heading, ...]]:
    pieces: list[str] = []
    spans: list[tuple[int, int, int]] = []  # (level, start, end) in the text without marks
    open_at: list[tuple[int, int]] = []  # (level, start)
    length = previous = 0
    for mark in _SENTINEL_RE.finditer(marked):
        pieces.append(marked[previous : mark.start()])
        length += mark.start() - previous
        previous = mark.end()
        if mark.group() != _HEADING_END:
            open_at.append((ord(mark.group()) - 0xFDD0, length))
        elif open_at:
            level, start = open_at.pop()
            if not open_at:  # a heading inside a heading (invalid HTML) is part of the outer one
                spans.append((level, start, length))
    pieces.append(marked[previous:])
    text = "".join(pieces)
    found = []
    for level, start, end in spans:
        words = " ".join(text[start:end].split())
        if words:
            found.append(Heading(text.rfind("\n", 0, start) + 1, level, words))
    return text, tuple(found)


@register(".pdf")
def _load_pdf(path: Path, data: bytes) -> LoadedText:
    from pypdf import PasswordType, PdfReader
    from pypdf.errors import DependencyError

    name = str(path)
    with _parser_errors(name, "broken PDF"):
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            # Many PDFs are "encrypted" only to restrict printing/copying and open with the empty password.
            try:
                opened = reader.decrypt("") != PasswordType.NOT_DECRYPTED
            except DependencyError as exc:
                raise LoadError(name, "encrypted PDF (reading it needs the 'cryptography' package)") from exc
            if not opened:
                raise LoadError(name, "encrypted PDF")
        pages = [page.extract_text() or "" for page in reader.pages]
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    if not any(page.strip() for page in pages):
        raise LoadError(name, "no text layer (scanned PDF?)", no_text=True)
    text = _normalise_newlines("\n\n".join(pages))
    return LoadedText(text, _clean_title(title), _pdf_outline(reader, pages, text))


# A PDF's outline is read up to this many entries: it is a guide to the text, not text.
MAX_OUTLINE_ENTRIES = 10_000


def _pdf_outline(reader: PdfReader, pages: list[str], text: str) -> tuple[Heading, ...]:
    """The outline's entries as headings, best effort (a broken outline gives none, never a failed load): level
    from nesting, offset where the entry's title starts a line on its page, else the page's start."""
    # A page's chunk ends in the separator's newlines, so normalising chunk by chunk gives the joined text's offsets.
    page_starts = [0]
    for page in pages[:-1]:
        page_starts.append(page_starts[-1] + len(_normalise_newlines(page + "\n\n")))
    headings: list[Heading] = []
    try:
        stack: list[tuple[list[object], int]] = [(list(reader.outline), 1)]
        while stack and len(headings) < MAX_OUTLINE_ENTRIES:
            entries, level = stack.pop()
            # Each list that follows an entry holds that entry's children.
            for position, entry in enumerate(entries):
                if isinstance(entry, list):
                    continue
                if position + 1 < len(entries) and isinstance(entries[position + 1], list):
                    stack.append((entries[position + 1], level + 1))
                number = reader.get_destination_page_number(entry)  # type: ignore[arg-type]
                words = " ".join(str(getattr(entry, "title", "") or "").split())
                if words and number is not None and 0 <= number < len(pages):
                    start = page_starts[number]
                    end = start + len(_normalise_newlines(pages[number]))
                    found = text.find(words, start, end)
                    at = text.rfind("\n", start, found) + 1 if found >= 0 else start
                    headings.append(Heading(max(at, start), min(level, 6), words))
    except Exception:  # noqa: BLE001 - any outline problem (pypdf raises many types) only loses the headings
        return ()
    return tuple(sorted(headings, key=lambda h: h.start))


@register(".docx")
def _load_docx(path: Path, data: bytes) -> LoadedText:
    import docx

    name = str(path)
    _check_zip(name, data)
    with _parser_errors(name, "not a valid DOCX file"):
        document = docx.Document(io.BytesIO(data))
    with _parser_errors(name, "cannot read DOCX"):
        paragraphs = [(p.text, p.style.name if p.style else None) for p in _docx_paragraphs(document)]
        core_title = document.core_properties.title
    titles = (text for text, style in paragraphs if text.strip() and (style or "").startswith(_DOCX_HEADINGS))
    headings: list[Heading] = []
    start = 0
    for paragraph, style in paragraphs:
        level = _docx_level(style)
        words = " ".join(paragraph.split())
        if level and words:
            headings.append(Heading(start, level, words))
        # The paragraph with its separator: normalising it alone gives its length in the joined text.
        start += len(_normalise_newlines(paragraph + "\n"))
    text = "\n".join(text for text, _ in paragraphs)
    return LoadedText(_normalise_newlines(text), _clean_title(next(titles, core_title)), tuple(headings))


_DOCX_LEVEL = re.compile(r"Heading ([1-9])")


def _docx_level(style: str | None) -> int:
    """A paragraph style's heading level: ``Heading n`` is n (at most 6), ``Title`` 1, any other style 0."""
    if style == "Title":
        return 1
    level = _DOCX_LEVEL.fullmatch(style or "")
    return min(int(level.group(1)), 6) if level else 0


def _check_zip(name: str, data: bytes, kind: str = "DOCX") -> None:
    """Refuse a zip whose parts would decompress to more than ``MAX_ZIP_BYTES`` (or that has more than
    ``MAX_ZIP_PARTS`` parts) before anything is decompressed. The sizes checked are the declared ones, which
    bound what is read: Python's zipfile stops each part at its declared size. ``kind`` names the format in
    the reasons ("not a valid PPTX file")."""
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            parts = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise LoadError(name, f"not a valid {kind} file ({exc})") from exc
    if len(parts) > MAX_ZIP_PARTS:
        raise LoadError(name, f"{len(parts):,} parts in the {kind}, over the {MAX_ZIP_PARTS:,} allowed")
    total = sum(p.file_size for p in parts)
    if total > MAX_ZIP_BYTES:
        raise LoadError(name, f"decompresses to {_mb(total)}, over the {_mb(MAX_ZIP_BYTES)} allowed")


def _docx_paragraphs(document: DocxDocument) -> Iterator[Paragraph]:
    """Body paragraphs in document order, with table cells (nested tables too) flattened in place."""
    from docx.table import Table

    stack: list[Paragraph | Table] = list(reversed(list(document.iter_inner_content())))
    while stack:
        item = stack.pop()
        if isinstance(item, Table):
            inner: list[Paragraph | Table] = []
            # A merged cell is returned once per grid column it spans; its text must appear once.
            seen: set[object] = set()
            for row in item.rows:
                for cell in row.cells:
                    if cell._tc not in seen:
                        seen.add(cell._tc)
                        inner.extend(cell.iter_inner_content())
            stack.extend(reversed(inner))
        else:
            yield item


def load_document(path: Path, max_bytes: int = MAX_FILE_BYTES, notes: list[str] | None = None) -> Document:
    """Read and parse one file; raises :class:`LoadError` with a one-line reason when it cannot.

    A file over ``max_bytes`` is refused before it is read; text formats are sniffed for binary content on
    their first bytes before the rest is read. The parsers' own log lines never reach the user
    (:func:`quiet_parsers`); when a file was read despite problems its parser reported (a malformed PDF
    repaired on the fly), one line saying so is appended to ``notes``.
    """
    name = str(path)
    # Checked before reading so that a large unsupported file is never read.
    loader = loader_for(path)
    if loader is None:
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
                raise LoadError(name, f"{_mb(info.st_size)} is over the {_mb(max_bytes)} limit (--max-file-mb)",
                                skipped="too_large")
            head = handle.read(_SNIFF_BYTES)
            if path.suffix.lower() in _TEXT_SUFFIXES and head:
                decode_text(head, name)  # binary content is refused before the rest is read
            # As much as the file holds and one byte more (a read reserves its whole length: the limit's would
            # fail under a memory cap for an 18-byte file), then, only if it grew meanwhile, up to one byte past
            # the limit: a file growing while it is read is still bounded.
            data = head + handle.read(max(0, min(info.st_size, max_bytes) + 1 - len(head)))
            if len(data) > info.st_size:
                data += handle.read(max(0, max_bytes + 1 - len(data)))
            if len(data) > max_bytes:
                raise LoadError(name, f"over the {_mb(max_bytes)} limit (--max-file-mb)", skipped="too_large")
    except OSError as exc:
        raise LoadError(name, f"cannot read: {exc.strerror or exc}") from exc
    except MemoryError as exc:
        raise LoadError(name, "out of memory reading it") from exc
    if not data:
        raise LoadError(name, "empty file", no_text=True)
    try:
        with quiet_parsers() as problems:
            loaded = loader(path, data)
    except MemoryError as exc:  # one file too large for this machine's memory is that file's failure only
        raise LoadError(name, "out of memory parsing it") from exc
    if problems and notes is not None:
        first = problems[0].strip().splitlines()[0][:200] if problems[0].strip() else "unnamed problem"
        more = f", and {len(problems) - 1} more" if len(problems) > 1 else ""
        notes.append(f"malformed {path.suffix.lower().lstrip('.').upper() or 'file'}, read as far as possible "
                     f"(the parser reported: {first}{more}); its text may be incomplete")
    # Normalised again so that every loader, including ones registered elsewhere, gives "\n"-only offsets.
    text = _normalise_newlines(loaded.text)
    if not text.strip():
        raise LoadError(name, "no text", no_text=True)
    title = _clean_title(loaded.title) or path.stem
    digest = hashlib.sha256(data).hexdigest()
    # A loader's headings index its text; any that do not (a loader registered elsewhere) are dropped.
    headings = tuple(h for h in loaded.headings if 0 <= h.start < len(text) and 1 <= h.level <= 6 and h.text)
    return Document(str(path.resolve()), title, text, info.st_mtime, info.st_size, digest,
                    headings=tuple(sorted(headings, key=lambda h: h.start)))


def selected(relative: str, name: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether a file passes the include/exclude globs (tried on the relative POSIX path and on the name)."""

    def matches(pattern: str) -> bool:
        return fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(name, pattern)

    return (not include or any(map(matches, include))) and not any(map(matches, exclude))


def walk(
    root: Path,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    on_error: Callable[[str, str], None] | None = None,
    follow_links: bool = False,
    on_skip: Callable[[str, str], None] | None = None,
    skipped: Counter[str] | None = None,
    within: Collection[str] | None = None,
) -> Iterator[Path]:
    """Yield the absolute paths of loadable files under ``root`` (resolved to its real path, so a folder reached
    through a link or under another name is the same folder), in sorted order.

    Hidden files and directories (name starting with ``"."``) are skipped; symlinked directories are not
    followed (so no symlink loops); a symlinked file is yielded when its target lies inside ``root``, or any
    target with ``follow_links`` (a link to ``/etc/passwd`` in a shared folder must not be indexed and served);
    one left out is reported to ``on_skip(path, reason)``. ``include``/``exclude`` are fnmatch patterns
    tried against the POSIX path relative to ``root`` and against the bare file name: a file is kept when it
    matches some include (or there is none) and no exclude. A file ``root`` is yielded, unfiltered, when a
    loader claims it. Raises :class:`LoadError` when ``root`` does not exist. A folder that cannot be listed
    (permissions) is reported to ``on_error(path, reason)`` and skipped. ``skipped`` counts what is left out
    silently, by reason: ``hidden`` (a hidden folder counts once, unlisted), ``unsupported``, ``excluded``.

    ``within``: absolute paths under the real ``root`` (files or folders, existing or not); only the files at or
    under one of them are yielded, by the same rules, and only the folders leading to them are listed (a
    watcher's changed paths, ``ingest/watch.py``).
    """
    count = skipped if skipped is not None else Counter[str]()
    base = Path(os.path.realpath(root))
    scope = None if within is None else Scope(within)
    if base.is_file():
        if loader_for(base) is not None:
            yield base
        return
    if not base.is_dir():
        raise LoadError(str(root), "no such file or directory")
    def failed(exc: OSError) -> None:
        if on_error is not None:
            on_error(os.path.abspath(exc.filename or base), f"cannot read folder: {exc.strerror or exc}")

    for dirpath, dirnames, filenames in os.walk(base, followlinks=False, onerror=failed):
        # Pruning in place is how os.walk is told not to descend.
        count["hidden"] += sum(d.startswith(".") for d in dirnames)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")
                             and (scope is None or scope.leads_to(os.path.join(dirpath, d))))
        directory = Path(dirpath)
        for filename in sorted(filenames):
            path = directory / filename
            if scope is not None and not scope.covers(str(path)):
                continue
            if filename.startswith("."):
                count["hidden"] += 1
                continue
            if loader_for(path) is None:
                count["unsupported"] += 1
                continue
            if not selected(path.relative_to(base).as_posix(), filename, include, exclude):
                count["excluded"] += 1
                continue
            if not follow_links and path.is_symlink() and not _inside(os.path.realpath(path), str(base)):
                if on_skip is not None:
                    on_skip(str(path), "a link to a file outside the folder (--follow-links to index it)")
                continue
            yield path


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class Scope:
    """Some absolute paths of a tree: which folders lead to them, and which paths they cover (a path at or under
    one of them)."""

    def __init__(self, paths: Collection[str]) -> None:
        self.paths = {os.path.normpath(p) for p in paths}
        self.ancestors = {str(parent) for p in self.paths for parent in Path(p).parents}

    def covers(self, path: str) -> bool:
        return path in self.paths or any(str(parent) in self.paths for parent in Path(path).parents)

    def leads_to(self, folder: str) -> bool:
        return folder in self.ancestors or self.covers(folder)

