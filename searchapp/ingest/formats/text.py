"""Plain text and the light markups (Markdown, reStructuredText, AsciiDoc), read by ``ingest/markup`` as a reader
sees them: markup blanked to spaces of the same length (offsets into the text are offsets into the decoded file),
their headings and title."""

from __future__ import annotations

from pathlib import Path

from searchapp.ingest import markup
from searchapp.ingest.formats.decoding import LOGGERS, decode_text
from searchapp.ingest.formats.format import Format, LoadedText, clean_title


def _load_txt(path: Path, data: bytes) -> LoadedText:
    return LoadedText(decode_text(data, str(path)), None)


def _load_markdown(path: Path, data: bytes) -> LoadedText:
    return _reading(markup.read_markdown(decode_text(data, str(path))))


def _load_rst(path: Path, data: bytes) -> LoadedText:
    return _reading(markup.read_rst(decode_text(data, str(path))))


def _load_asciidoc(path: Path, data: bytes) -> LoadedText:
    return _reading(markup.read_asciidoc(decode_text(data, str(path))))


def _reading(reading: markup.Reading) -> LoadedText:
    return LoadedText(reading.text, clean_title(reading.title), reading.headings)


TXT = Format("plain text", (".txt",), _load_txt, is_text=True, loggers=LOGGERS)
MARKDOWN = Format("Markdown", (".md", ".markdown"), _load_markdown, is_text=True, loggers=LOGGERS)
RST = Format("reStructuredText", (".rst",), _load_rst, is_text=True, loggers=LOGGERS)
ASCIIDOC = Format("AsciiDoc", (".adoc", ".asciidoc"), _load_asciidoc, is_text=True, loggers=LOGGERS)
