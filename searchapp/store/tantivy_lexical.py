"""A lexical index on tantivy (the Rust engine under Quickwit; ``store/lexical_index.py``'s interface), beside the
index database in ``lexical/``: top-k search that stops early (Block-Max WAND) instead of scoring every passage
that matches any term.

It reads the one analysis, as PostgreSQL's BM25 index does: each passage's terms as FTS5's tokenizer makes them
(lower-cased, accents folded, Porter stems, runs of scripts written without spaces cut into two-letter units), its
section path's ``analysis.SECTION_WEIGHT`` times and then its text's, in one field (``ANALYSIS.index_terms``),
split at spaces; a query's terms likewise (``ANALYSIS.query_terms``). The score is tantivy's BM25 (k1 1.2,
b 0.75) over that field. (Two fields, the section's boosted, scored Flask's documentation questions worse: each
field's own length statistics reward a short section path that repeats the query's words.)

Derived data, as the FAISS file is, with its own commit: what a write adds or removes is staged inside the
records' transaction, which also counts the write (the ``lexical_generation`` settings row), and applied after
that transaction commits; tantivy's commit is then followed by a small state file naming the generation it holds.
Every read session compares the two (one row, one small file): an index behind the records (a kill between the
two commits, or between tantivy's and the state file), missing (deleted by hand) or torn is rebuilt from the
stored passages, with a line on stderr: beside the old one and swapped in by rename where this process may
write the folder, in memory where it cannot; a reader while another process writes reads the disk's, which that
writer made current when it took the lock.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, text

from searchapp.analysis import ANALYSIS
from searchapp.errors import ConfigError
from searchapp.store.lexical_index import ENGINE_FOLDERS, Access, SessionContext
from searchapp.types import Run

FOLDER, NEW_FOLDER, OLD_FOLDER = ENGINE_FOLDERS
STATE = "searchapp-state"  # in FOLDER: "<build> <generation>", the records' write generation the index holds
GENERATION_KEY = "lexical_generation"  # the settings row counting the records' lexical writes
TOKENIZER = "searchapp_terms"  # the terms are ours (analysis.py): split at the spaces fts5_terms joins them with
REBUILD_BATCH = 2_000
PROGRESS_EVERY = 100_000  # a rebuild's progress line every this many passages
WRITER_HEAP = 64 * 2**20

log = logging.getLogger(__name__)


def records_generation(conn: Connection) -> int:
    """How many lexical writes the records have committed (as ``conn``'s snapshot sees them)."""
    value = conn.execute(text("SELECT value FROM settings WHERE key = :k"), {"k": GENERATION_KEY}).scalar()
    return int(value or 0)


def bump_generation(conn: Connection) -> int:
    """Count one more lexical write in the records' transaction on ``conn``; its new generation."""
    return int(conn.execute(text(
        "INSERT INTO settings (key, value) VALUES (:k, '1') "
        "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 RETURNING value"
    ), {"k": GENERATION_KEY}).scalar_one())


def _tantivy() -> Any:
    try:
        import tantivy
    except ImportError as exc:
        # Where tantivy has no wheel (pyproject.toml), an index made elsewhere with it still converts to FTS5.
        raise ConfigError(
            f"this index's lexical engine is tantivy, which is not installed here ({exc.name or exc}): install it "
            "(pip install 'tantivy>=0.27,<0.28') or move the index to FTS5 (searchapp lexical-engine fts5 --index "
            "DIR)"
        ) from exc
    return tantivy


class TantivyIndex:
    """The tantivy engine of one index folder."""

    name = "tantivy"

    def __init__(self, folder: Path | None) -> None:
        if folder is None:
            raise ValueError("the tantivy lexical index lives in an index folder")
        self.path = folder / FOLDER
        self._index: Any = None
        self._build = ""  # the on-disk build the open index is ("" in memory)
        self._generation = -1  # the records' generation the open index holds
        self._staged: list[tuple[str, Sequence[int], Sequence[str], Sequence[str]]] = []
        self._staged_generation: int | None = None
        self._mutex = threading.RLock()

    # -- the index itself --------------------------------------------------------------------------------------

    @staticmethod
    def _schema() -> Any:
        t = _tantivy()
        builder = t.SchemaBuilder()
        builder.add_unsigned_field("id", stored=False, indexed=True, fast=True)
        builder.add_text_field("terms", tokenizer_name=TOKENIZER, index_option="freq")
        return builder.build()

    @staticmethod
    def _open(path: Path | None) -> Any:
        t = _tantivy()
        if path is None:
            index = t.Index(TantivyIndex._schema())
        else:
            path.mkdir(exist_ok=True)
            index = t.Index(TantivyIndex._schema(), path=str(path), reuse=True)
        index.register_tokenizer(TOKENIZER, t.TextAnalyzerBuilder(t.Tokenizer.whitespace()).build())
        return index

    def _state(self) -> tuple[str, int] | None:
        """(build, generation) of the index on disk: the records' generation its last commit holds."""
        try:
            build, generation = (self.path / STATE).read_text(encoding="ascii").split()
            return build, int(generation)
        except (OSError, ValueError):
            return None

    def _write_state(self, path: Path, build: str, generation: int) -> None:
        # Written after tantivy's own commit, by rename: a kill before it leaves the older state, read as behind.
        tmp = path / (STATE + ".tmp")
        tmp.write_text(f"{build} {generation}\n", encoding="ascii")
        os.replace(tmp, path / STATE)

    def ready(self, connect: Callable[[], Connection], passages: Callable[[], Iterator[tuple[int, str, str]]],
              access: Access) -> None:
        """Compare the index's generation with the records' (one settings row and one small file, every read
        session) and rebuild it from ``passages`` where it is behind: on disk for ``"write"``, in memory for
        ``"read"``; ``"busy"`` reads the disk's, which the writer holding the lock keeps current."""
        with self._mutex:
            with connect() as conn:
                want = records_generation(conn)
            state = self._state()
            if self._index is not None:
                if not self._build:  # in memory
                    if self._generation >= want:
                        return
                elif state is not None and state[0] == self._build and (state[1] >= want or access == "busy"):
                    self._generation = state[1]
                    return
                elif state is None and access == "busy":
                    return  # a writer is replacing it: the open one serves until it is back
            if state is not None and (state[1] >= want or access == "busy"):
                with contextlib.suppress(Exception):  # a torn or foreign folder: rebuilt below
                    self._index, self._build, self._generation = self._open(self.path), state[0], state[1]
                    return
            # A new index (no lexical write yet) is made empty without a word; anything else is a rebuild.
            self._rebuild(want, passages, on_disk=access == "write", announce=want > 0)

    def _rebuild(self, generation: int, passages: Callable[[], Iterator[tuple[int, str, str]]],
                 on_disk: bool, announce: bool = True) -> int:
        """A new index of every stored passage: on disk, built beside the old one and swapped in by rename (a
        reader of the old keeps it until it sees the new build), else in memory for this process."""
        where = "on disk" if on_disk else "in memory, as this process cannot write the folder"
        if announce:
            log.warning("rebuilding the lexical index of %s from its stored passages (%s)", self.path.parent, where)
        started = time.monotonic()
        path = self.path.with_name(NEW_FOLDER) if on_disk else None
        if path is not None:
            shutil.rmtree(path, ignore_errors=True)
        index = self._open(path)
        writer = index.writer(WRITER_HEAP, 1)
        batch: list[tuple[int, str, str]] = []
        n = 0
        for row in passages():
            batch.append(row)
            if len(batch) >= REBUILD_BATCH:
                self._add_rows(writer, batch)
                n += len(batch)
                batch = []
                if announce and n % PROGRESS_EVERY == 0:
                    log.warning("... %d passages", n)
        self._add_rows(writer, batch)
        n += len(batch)
        writer.commit()
        writer.wait_merging_threads()
        build = ""
        if path is not None:
            build = uuid.uuid4().hex
            self._write_state(path, build, generation)
            old = self.path.with_name(OLD_FOLDER)
            shutil.rmtree(old, ignore_errors=True)
            with contextlib.suppress(FileNotFoundError):
                os.replace(self.path, old)
            os.replace(path, self.path)
            shutil.rmtree(old, ignore_errors=True)
            index = self._open(self.path)
        index.reload()
        self._index, self._build, self._generation = index, build, generation
        if announce:
            log.warning("rebuilt the lexical index: %d passages in %.1f s", n, time.monotonic() - started)
        return n

    @staticmethod
    def _add_rows(writer: Any, rows: Sequence[tuple[int, str, str]]) -> None:
        if not rows:
            return
        t = _tantivy()
        fields = ANALYSIS.index_terms([r[1] for r in rows], [r[2] for r in rows])
        for (pid, _, _), terms in zip(rows, fields, strict=True):
            doc = t.Document()
            doc.add_unsigned("id", pid)
            doc.add_text("terms", terms)
            writer.add_document(doc)

    # -- writes: staged in the records' transaction, applied after it commits ----------------------------------

    def add(self, conn: Connection, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> None:
        self._staged.append(("add", list(ids), list(texts), list(sections)))
        self._staged_generation = bump_generation(conn)

    def remove(self, conn: Connection, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> None:
        self._staged.append(("remove", list(ids), [], []))
        self._staged_generation = bump_generation(conn)

    def committed(self) -> None:
        staged, self._staged = self._staged, []
        generation, self._staged_generation = self._staged_generation, None
        if not staged or generation is None:
            return
        with self._mutex:
            if self._index is None or not self._build:
                # Not made ready on disk in this process: the next ready() finds it behind and rebuilds it.
                return
            writer = self._index.writer(WRITER_HEAP, 1)
            for kind, ids, texts, sections in staged:
                if kind == "remove" and ids:
                    # By a query, not delete_documents_by_term: the binding makes a Python int a signed term,
                    # which never equals the unsigned field's, and deletes nothing.
                    t = _tantivy()
                    writer.delete_documents_by_query(t.Query.term_set_query(self._index.schema, "id", list(ids)))
                else:
                    self._add_rows(writer, list(zip(ids, texts, sections, strict=True)))
            writer.commit()
            writer.wait_merging_threads()
            self._write_state(self.path, self._build, generation)
            self._generation = generation

    def abandoned(self) -> None:
        self._staged, self._staged_generation = [], None

    # -- moving an index to or from this engine ---------------------------------------------------------------

    def build(self, connect: Callable[[], Connection], passages: Callable[[], Iterator[tuple[int, str, str]]]) -> int:
        with self._mutex:
            with connect() as conn:
                generation = records_generation(conn)
            return self._rebuild(generation, passages, on_disk=True)

    def fill(self, conn: Connection, passages: Callable[[], Iterator[tuple[int, str, str]]]) -> int:
        return 0  # nothing in the records

    def clear(self, conn: Connection) -> None:
        pass

    def retire(self) -> None:
        with self._mutex:
            self._index = None
            for leftover in (self.path, self.path.with_name(NEW_FOLDER), self.path.with_name(OLD_FOLDER)):
                shutil.rmtree(leftover, ignore_errors=True)

    # -- reads -------------------------------------------------------------------------------------------------

    def session(self, context: SessionContext) -> TantivySession:
        return TantivySession(self, context)

    def size(self, conn: Connection) -> int:
        if not self.path.is_dir():
            return 0
        return sum(f.stat().st_size for f in self.path.iterdir() if f.is_file())


class _Matched:
    """A hybrid query's matches: the top ``k`` and any passage's score by a second, restricted search."""

    def __init__(self, session: TantivySession, query: str, k: int) -> None:
        self.session, self.query = session, query
        self.top = session.search(query, k)

    def scores(self, ids: Sequence[int]) -> dict[int, float]:
        out = dict.fromkeys(ids, 0.0)
        if ids:
            out.update(self.session.search(self.query, len(ids), among=ids))
        return out

    def __enter__(self) -> _Matched:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class TantivySession:
    """A read session's tantivy side, under the session's filter (its allowed ids, read once)."""

    def __init__(self, engine: TantivyIndex, context: SessionContext) -> None:
        self.engine, self.context = engine, context
        self._allowed: list[int] | None = None
        if context.restrict is not None:
            sql, params = context.restrict
            self._allowed = [int(r[0]) for r in context.conn.execute(text(sql), params)]

    def _searcher(self) -> Any:
        index = self.engine._index
        if index is None:  # pragma: no cover - the stores make the index ready before a session reads it
            raise RuntimeError("the lexical index was not made ready")
        index.reload()
        return index.searcher()

    def _query(self, terms: Sequence[str], among: Sequence[int] | None) -> Any:
        t = _tantivy()
        # A term twice where two of the query's words share it, as FTS5's OR of one phrase a word counts it.
        query = t.Query.boolean_query([(t.Occur.Should, t.Query.term_query(self._schema, "terms", term))
                                       for term in terms])
        filters = [ids for ids in (self._allowed, among) if ids is not None]
        if not filters:
            return query
        musts = [(t.Occur.Must, query)] + [(t.Occur.Must, t.Query.term_set_query(self._schema, "id", list(ids)))
                                           for ids in filters]
        return t.Query.boolean_query(musts)

    @property
    def _schema(self) -> Any:
        return self.engine._index.schema

    def search(self, query: str, k: int, among: Sequence[int] | None = None) -> Run:
        terms = ANALYSIS.query_terms(query)
        if not terms or k <= 0 or (self._allowed is not None and not self._allowed):
            return []
        searcher = self._searcher()
        # tantivy sizes its top-k heap by k: a k past the passages held would only allocate (and panic past memory).
        k = min(k, searcher.num_docs)
        if k <= 0:
            return []
        hits = searcher.search(self._query(terms, among), k, count=False).hits
        ids = searcher.fast_field_values("id", [address for _, address in hits])
        run = [(int(pid), float(score)) for (score, _), pid in zip(hits, ids, strict=True) if score > 0]
        return sorted(run, key=lambda h: (-h[1], h[0]))

    def matches(self, query: str, k: int) -> _Matched:
        return _Matched(self, query, k)

    def idf(self, query: str) -> dict[str, float]:
        """Each query word's IDF as tantivy's BM25 weighs its (first) term in the text field."""
        searcher = self._searcher()
        n = searcher.num_docs
        words = ANALYSIS.query_words(query)
        out = {}
        for word, found in zip(words, ANALYSIS.stems(words), strict=True):
            if found:
                df = searcher.doc_freq("terms", min(found))
                out[word] = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return out
