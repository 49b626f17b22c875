"""The folder backend's lexical index behind one interface: what the records' write transactions and a read
session ask of a lexical engine, whatever the engine. two implementations: FTS5 (``store/lexical.py``) and
tantivy (``store/tantivy_lexical.py``); another is one class and one line in :data:`ENGINES` (docs/architecture.md).

Every engine reads the one text analysis (``analysis.py``: the terms a query and a passage are made of), so the
same words match on every engine, on PostgreSQL and in the snippets.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from sqlalchemy import Connection

from searchapp.store.filter_sql import Restrict
from searchapp.types import Run

# Who is about to read or write (LexicalIndex.ready): a writer holding the folder's lock, a reader of a folder it
# cannot write, or a reader while another process holds the lock.
Access = Literal["write", "read", "busy"]


class Matched(Protocol):
    """One query's matches, scored once: the top ``k`` and any other passage's score by a lookup (a hybrid
    query's dense candidates, known only later). A context manager: leaving it frees what it holds."""

    top: Run

    def scores(self, ids: Sequence[int]) -> dict[int, float]:
        """BM25 of the given passages (0 for those that match no term)."""
        ...

    def __enter__(self) -> Matched: ...

    def __exit__(self, *exc: object) -> None: ...


class LexicalSession(Protocol):
    """A read session's lexical side, under the session's filter."""

    def search(self, query: str, k: int) -> Run:
        """The ``k`` best passages for ``query`` by BM25, best first, scores > 0."""
        ...

    def matches(self, query: str, k: int) -> Matched:
        """``query``'s matches for a hybrid query: its top ``k`` and the scores of any passages."""
        ...

    def idf(self, query: str) -> dict[str, float]:
        """Each query term's IDF as the engine's BM25 weighs it (for ``--explain`` and diagnostics)."""
        ...


@dataclass(frozen=True)
class SessionContext:
    """What a read session gives its lexical side: its connection and filter (``restrict``: a SELECT of the
    allowed passage ids, or None), more connections of the same database for the session (``connect``, held by
    ``stack``), how many parts a query may be scored in at once and from how many ids, and the query threads."""

    conn: Connection
    restrict: Restrict | None
    connect: Callable[[], Connection]
    stack: contextlib.ExitStack | None
    max_parts: int
    parallel_min: int
    pool: Callable[[], ThreadPoolExecutor]


class LexicalIndex(Protocol):
    """A lexical engine of the folder backend: kept in step with the passages inside the records' own write
    transactions (``add``, ``remove``: what is committed there is what it holds), and read in sessions."""

    name: str

    def add(self, conn: Connection, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> None:
        """Index passages (their texts and section paths) in the transaction on ``conn`` that inserts them."""
        ...

    def remove(self, conn: Connection, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> None:
        """Unindex passages (given as they were indexed) in the transaction on ``conn`` that deletes them."""
        ...

    def session(self, context: SessionContext) -> LexicalSession:
        """The lexical side of a read session."""
        ...

    def size(self, conn: Connection) -> int:
        """Bytes the engine's data take (for ``status`` and the benchmarks)."""
        ...

    def ready(self, connect: Callable[[], Connection], passages: Callable[[], Iterator[tuple[int, str, str]]],
              access: Access) -> None:
        """Before every read session and write: an engine whose data live outside the records' transactions
        checks them against the records (read on a connection from ``connect``) and, where they are behind,
        catches up from ``passages`` (``(id, text, section)`` in id order): on disk for a writer (``"write"``),
        in memory for a reader of a folder it cannot write (``"read"``); a reader while another process writes
        (``"busy"``) reads what is on disk, which that writer keeps current."""
        ...

    def committed(self) -> None:
        """The records' write transaction committed: apply what ``add`` and ``remove`` staged (an engine whose
        data live outside the transaction)."""
        ...

    def abandoned(self) -> None:
        """The records' write transaction rolled back: drop what was staged."""
        ...

    # -- moving an index from one engine to another (FolderStores.use_lexical_engine) ----------------------------

    def build(self, connect: Callable[[], Connection], passages: Callable[[], Iterator[tuple[int, str, str]]]) -> int:
        """Make the data this engine keeps outside the records from every stored passage, before the switching
        transaction; the passages indexed (0 for an engine that keeps nothing outside)."""
        ...

    def fill(self, conn: Connection, passages: Callable[[], Iterator[tuple[int, str, str]]]) -> int:
        """Make the data this engine keeps inside the records, in the switching transaction on ``conn``."""
        ...

    def clear(self, conn: Connection) -> None:
        """Empty the data this engine keeps inside the records, in the switching transaction on ``conn``."""
        ...

    def retire(self) -> None:
        """Remove the data this engine keeps outside the records, once another engine has taken over (or what an
        interrupted switch left)."""
        ...


# The engines by name, each as "module:class" (imported when first asked for; made with the index folder, or None
# for a database alone): the folder backend's is "fts5".
ENGINES: dict[str, str] = {
    "fts5": "searchapp.store.lexical:Fts5Index",
    "tantivy": "searchapp.store.tantivy_lexical:TantivyIndex",
}
# The folders an engine keeps beside the index database (tantivy's index, and the two sides of its rebuild's swap):
# the index's own, never documents (a walk of a folder that is also the index skips them).
ENGINE_FOLDERS = ("lexical", "lexical.new", "lexical.old")

# A new folder index's engine: tantivy (top-k search that stops early: docs/performance.md) where its wheel is
# installed (pyproject.toml installs it wherever one exists), else FTS5. An index keeps the engine it was made with.
DEFAULT = "tantivy" if importlib.util.find_spec("tantivy") is not None else "fts5"


def engine(name: str | None = None, folder: Path | None = None) -> LexicalIndex:
    """A new instance of the engine registered as ``name`` (else :data:`DEFAULT`) for the index in ``folder``."""
    module, _, cls = ENGINES[name or DEFAULT].partition(":")
    made: LexicalIndex = getattr(importlib.import_module(module), cls)(folder)
    return made
