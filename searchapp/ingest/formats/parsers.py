"""The third-party parsers a loader calls: what they raise on malformed input turned into a one-line
:class:`~searchapp.errors.LoadError`, and their log lines and warnings kept from the user's terminal."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from searchapp.errors import LoadError


@contextmanager
def parser_errors(path: str, reason: str) -> Iterator[None]:
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
        detail = _xml_limit(message) or (message.splitlines()[0][:200] if message else type(exc).__name__)
        raise LoadError(path, f"{reason} ({detail})") from exc


# libxml2's default limits, which every XML part is parsed within (lxml's huge_tree=False; python-docx's parser
# too): elements nested at most this deep, a text, value or name at most this long.
XML_MAX_DEPTH = 256
XML_MAX_TEXT = 10_000_000


def _xml_limit(message: str) -> str | None:
    """A libxml2 limit that ``message`` reports, in our words; ``None`` for any other message.

    libxml2 says which of its options lifts the limit ("Excessive depth in document: 256, use XML_PARSE_HUGE
    option"): a name that means nothing to the user, who cannot set it. Its messages, not its error codes, are
    what its versions share (2.12's depth error has the code of an internal error, 2.14's a resource limit's)."""
    lowered = message.lower()
    if "xml_parse_huge" not in lowered and "huge text node" not in lowered and "huge input lookup" not in lowered:
        return None
    if "depth" in lowered:
        return f"nested more than {XML_MAX_DEPTH} levels deep"
    return f"a text or value over {XML_MAX_TEXT:,} characters long"


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def quiet_parsers(loggers: Sequence[str]) -> Iterator[list[str]]:
    """While the block runs, the log records (warning and above) of the named ``loggers`` are collected, not
    printed, and ``warnings.warn`` calls (advice to programmers: "markup resembles a file name") are dropped.
    Yields the list the messages are collected into.

    Parsers log what they repair in a malformed file ("incorrect startxref pointer", "Ignoring wrong pointing
    object") as warnings that would reach the user's terminal, in their words, through logging's last-resort
    handler. Each format names its parsers' loggers (``Format.loggers``).

    Not for concurrent use from several threads: ``warnings`` filters are process-wide (an ingest parses in one
    thread; a Ray worker is a process of its own)."""
    capture = _Capture()
    saved = []
    for name in loggers:
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
