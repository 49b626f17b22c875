"""A lexical index on tantivy (the Rust engine under Quickwit; ``store/lexical_index.py``'s interface), beside the
index database in ``lexical/``: top-k search that stops early (Block-Max WAND) instead of scoring every passage
that matches any term.

It reads the one analysis, as PostgreSQL's BM25 index does: each passage's terms as FTS5's tokenizer makes them
(lower-cased, accents folded, Porter stems, runs of scripts written without spaces cut into two-letter units), its
section path's ``analysis.SECTION_WEIGHT`` times and then its text's, in one field (``analysis.lexical_fields``),
split at spaces; a query's terms likewise (``analysis.fts5_query_terms``). The score is tantivy's BM25 (k1 1.2,
b 0.75) over that field. (Two fields, the section's boosted, scored Flask's documentation questions worse: each
field's own length statistics reward a short section path that repeats the query's words.)

Derived data, as the FAISS file is: written after the records' transaction commits (what a write adds or removes
is staged inside it, and dropped if it rolls back), and checked against the database when a session first reads
it: its passage count and largest id against the records'; a stale or missing index is rebuilt from the stored
passages (in memory for a reader that cannot write the folder).

Opt in (an engine of ``lexical_index.ENGINES``; FTS5 stays the folder backend's default until this one has been
measured against it: docs/performance.md).
"""

from __future__ import annotations

import contextlib
import math
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, text

from searchapp.analysis import fts5_query_terms, lexical_fields, query_terms, stems
from searchapp.extras import missing
from searchapp.store.lexical_index import SessionContext
from searchapp.types import Run

FOLDER = "lexical"
TOKENIZER = "searchapp_terms"  # the terms are ours (analysis.py): split at the spaces fts5_terms joins them with
REBUILD_BATCH = 2_000
WRITER_HEAP = 64 * 2**20


def _tantivy() -> Any:
    try:
        import tantivy
    except ImportError as exc:
        raise missing("tantivy", "an index with the tantivy lexical engine", exc) from exc
    return tantivy


class TantivyIndex:
    """The tantivy engine of one index folder."""

    name = "tantivy"

    def __init__(self, folder: Path | None) -> None:
        if folder is None:
            raise ValueError("the tantivy lexical index lives in an index folder")
        self.path = folder / FOLDER
        self._index: Any = None
        self._staged: list[tuple[str, Sequence[int], Sequence[str], Sequence[str]]] = []
        self._mutex = threading.RLock()
        self._checked = False

    # -- the index itself --------------------------------------------------------------------------------------

    @staticmethod
    def _schema() -> Any:
        t = _tantivy()
        builder = t.SchemaBuilder()
        builder.add_unsigned_field("id", stored=False, indexed=True, fast=True)
        builder.add_text_field("terms", tokenizer_name=TOKENIZER, index_option="freq")
        return builder.build()

    def _open(self, in_memory: bool = False) -> Any:
        t = _tantivy()
        if in_memory:
            index = t.Index(self._schema())
        else:
            self.path.mkdir(exist_ok=True)
            index = t.Index(self._schema(), path=str(self.path), reuse=True)
        index.register_tokenizer(TOKENIZER, t.TextAnalyzerBuilder(t.Tokenizer.whitespace()).build())
        return index

    def _state(self, index: Any) -> tuple[int, int]:
        """(passages, largest id or 0) the index holds."""
        t = _tantivy()
        index.reload()
        searcher = index.searcher()
        n = searcher.num_docs
        if not n:
            return 0, 0
        hits = searcher.search(t.Query.all_query(), 1, count=False, order_by_field="id").hits
        return n, int(hits[0][0]) if hits else 0

    def ready(self, summary: Callable[[], tuple[int, int]], passages: Callable[[], Iterator[tuple[int, str, str]]],
              writable: bool) -> None:
        """Make the index current with the records (``summary``: their passage count and largest id), rebuilt
        from ``passages`` where it is not: on disk where ``writable``, else in memory. Checked once a process."""
        with self._mutex:
            if self._index is not None and self._checked:
                return
            index = None
            with contextlib.suppress(Exception):  # a missing, torn or foreign folder: rebuilt below
                index = self._open()
                if self._state(index) != summary():
                    index = None
            if index is None:
                index = self._rebuild(passages, in_memory=not writable)
            self._index, self._checked = index, True

    def _rebuild(self, passages: Callable[[], Iterator[tuple[int, str, str]]], in_memory: bool) -> Any:
        if not in_memory:
            shutil.rmtree(self.path, ignore_errors=True)
        index = self._open(in_memory)
        writer = index.writer(WRITER_HEAP, 1)
        batch: list[tuple[int, str, str]] = []
        for row in passages():
            batch.append(row)
            if len(batch) >= REBUILD_BATCH:
                self._add_rows(writer, batch)
                batch = []
        self._add_rows(writer, batch)
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        return index

    @staticmethod
    def _add_rows(writer: Any, rows: Sequence[tuple[int, str, str]]) -> None:
        if not rows:
            return
        t = _tantivy()
        fields = lexical_fields([r[1] for r in rows], [r[2] for r in rows])
        for (pid, _, _), terms in zip(rows, fields, strict=True):
            doc = t.Document()
            doc.add_unsigned("id", pid)
            doc.add_text("terms", terms)
            writer.add_document(doc)

    # -- writes: staged in the records' transaction, applied after it commits ----------------------------------

    def add(self, conn: Connection, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> None:
        self._staged.append(("add", list(ids), list(texts), list(sections)))

    def remove(self, conn: Connection, ids: Sequence[int], texts: Sequence[str], sections: Sequence[str]) -> None:
        self._staged.append(("remove", list(ids), [], []))

    def committed(self) -> None:
        staged, self._staged = self._staged, []
        if not staged or self._index is None:
            # Not opened in this process: the next session's check finds it behind the records and rebuilds it.
            self._checked = False
            return
        writer = self._index.writer(WRITER_HEAP, 1)
        for kind, ids, texts, sections in staged:
            if kind == "remove":
                for pid in ids:
                    writer.delete_documents_by_term("id", pid)
            else:
                self._add_rows(writer, list(zip(ids, texts, sections, strict=True)))
        writer.commit()
        writer.wait_merging_threads()

    def abandoned(self) -> None:
        self._staged = []

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
        terms = fts5_query_terms(query)
        if not terms or k <= 0 or (self._allowed is not None and not self._allowed):
            return []
        searcher = self._searcher()
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
        words = query_terms(query)
        out = {}
        for word, found in zip(words, stems(words), strict=True):
            if found:
                df = searcher.doc_freq("terms", min(found))
                out[word] = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return out
