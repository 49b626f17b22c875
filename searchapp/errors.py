"""Typed errors raised by the library. The edges turn them into what their users see: the CLI into one-line messages
and exit codes, the HTTP server into statuses, and the client back into these types."""

from __future__ import annotations


class SearchappError(Exception):
    """Base class of every error the library raises on purpose."""


def first_line(exc: BaseException, limit: int = 200) -> str:
    """An exception's message as one line for a one-line error (many drivers' messages run over several lines):
    its first line, at most ``limit`` characters, or the exception's type when it has no message."""
    lines = str(exc).strip().splitlines()
    return lines[0][:limit] if lines else type(exc).__name__


class ConfigError(SearchappError):
    """An invalid setting or an unknown name (model, pooling, fusion, mode)."""


class ReadOnlyError(ConfigError):
    """A write to an index that is read-only: opened so, or held where this process may not write (a read-only
    connection or role, a hot standby). The message names the reason."""


class DeviceError(ConfigError):
    """A device string that is malformed, or names a device this machine cannot use (``cuda`` without a GPU)."""


class LoadError(SearchappError):
    """A file could not be read or parsed into text.

    Carries the path so that callers can report "<path>: <reason>" on one line. ``no_text``: the file was read
    and holds no text now (empty, blank, binary, a PDF without a text layer), which is a new state of the file,
    as opposed to a file that could not be read or parsed at all. ``skipped``: the reason as the ingest summary
    counts skipped files (``too_large``: refused before it was read; ``empty``: read, and nothing to search in it,
    which is no failure), ``None`` for a file that failed.
    """

    def __init__(self, path: str, reason: str, no_text: bool = False, skipped: str | None = None) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.no_text = no_text
        self.skipped = skipped


class IndexNotFoundError(SearchappError):
    """No index exists at the given location."""


class EncoderMismatchError(SearchappError):
    """The requested encoder differs from the one the index was built with."""


class SchemaError(SearchappError):
    """The index database has a schema this version cannot open or upgrade."""


class IndexLockedError(SearchappError):
    """Another process is writing to the index."""


class ModelLoadError(SearchappError):
    """Model weights or tokenizer could not be loaded."""


class StorageError(SearchappError, OSError):
    """The index could not be written (a full disk, an I/O error); what was committed before stays.

    Also an ``OSError``, which it is: callers that tolerate a failed write, such as a reader saving a rebuilt
    vector file, keep catching ``OSError``.
    """


class DataRejectedError(StorageError):
    """The database refused a document's data (text PostgreSQL cannot hold, say): the write rolled back; the
    index is sound and the other documents of the write can be written without it."""


class DocumentNotFoundError(SearchappError):
    """No document with the given path or text id, or no passage with the given id."""
