"""Plain text and the light markups (Markdown, reStructuredText, AsciiDoc), read by ``ingest/markup`` as a reader
sees them: markup blanked to spaces of the same length (offsets into the text are offsets into the decoded file),
their headings and title."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from searchapp.ingest import markup
from searchapp.ingest.formats.decoding import LOGGERS, decode_text
from searchapp.ingest.formats.format import Format, LoadedText, clean_title
from searchapp.ingest.formats.parsers import parser_errors


def _load_txt(path: Path, data: bytes) -> LoadedText:
    return LoadedText(decode_text(data, str(path)), None)


def _load_markdown(path: Path, data: bytes) -> LoadedText:
    return _read(path, data, markup.read_markdown, "Markdown")


def _load_rst(path: Path, data: bytes) -> LoadedText:
    return _read(path, data, markup.read_rst, "reStructuredText")


def _load_asciidoc(path: Path, data: bytes) -> LoadedText:
    return _read(path, data, markup.read_asciidoc, "AsciiDoc")


def _read(path: Path, data: bytes, reader: Callable[[str], markup.Reading], syntax: str) -> LoadedText:
    """The markup read as a reader sees it. A fault in a reader on some input (a bug: they are meant to read
    anything) costs that file, as a failure naming it, never the rest of the ingest."""
    text = decode_text(data, str(path))
    with parser_errors(str(path), f"cannot read this {syntax}"):
        return _reading(reader(text))


def _reading(reading: markup.Reading) -> LoadedText:
    return LoadedText(reading.text, clean_title(reading.title), reading.headings)


TXT = Format("plain text", (".txt",), _load_txt, is_text=True, loggers=LOGGERS)
MARKDOWN = Format("Markdown", (".md", ".markdown"), _load_markdown, is_text=True, loggers=LOGGERS)
RST = Format("reStructuredText", (".rst",), _load_rst, is_text=True, loggers=LOGGERS)
ASCIIDOC = Format("AsciiDoc", (".adoc", ".asciidoc"), _load_asciidoc, is_text=True, loggers=LOGGERS)
