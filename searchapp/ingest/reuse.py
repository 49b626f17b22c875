"""Keeping the stored vectors of passages an ingest would otherwise embed again.

A passage's vector depends on nothing but its embedding input, the exact string the encoder is handed
(``sections.passage_input``: its text, under ``passage_context="section"`` its section path before it), and the
index's model; a text's vector does not depend on its batch (tests/integration/test_one_vector_per_text.py). So
when a file changes, its new passages whose input a stored passage of its old version had take that passage's
vector, and only the others are embedded: an edit of one paragraph of a long file embeds the passages it touched.
A file renamed, moved or copied (a new path whose content hash a stored document has, one the same run removes
included: the removal comes after the run's writes) takes the vectors of that document's passages alike; where
the inputs differ (a section path that starts with a title made from the file name) those passages are embedded.

The stored inputs are made again from what each passage keeps (text, section path, word pieces) with the index's
own ``passage_context`` and limit, which an index fixes when it is made: an input matches only where the string the
encoder saw then is the string it would see now.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from searchapp.ingest.sections import passage_input
from searchapp.store.base import Stores
from searchapp.store.rows import StoredDocument


@dataclass(frozen=True)
class Reused:
    """Of a new document's ``n`` passages, those that keep a stored vector: ``rows`` int64 ``(k,)`` their positions,
    ascending, and ``vectors`` float32 ``(k, d)`` their vectors, row i for ``rows[i]``."""

    n: int
    rows: np.ndarray
    vectors: np.ndarray

    @property
    def count(self) -> int:
        """Passages that keep a stored vector."""
        return len(self.rows)

    def missing(self) -> np.ndarray:
        """The positions of the passages to embed: int64 ``(n - k,)``, ascending."""
        keep = np.zeros(self.n, dtype=bool)
        keep[self.rows] = True
        return np.flatnonzero(~keep)

    def assemble(self, fresh: np.ndarray) -> np.ndarray:
        """All ``n`` vectors, float32 ``(n, d)``: the kept ones, and ``fresh`` (float32 ``(n - k, d)``, row i for
        ``missing()[i]``) for the others."""
        out = np.empty((self.n, self.vectors.shape[1]), dtype=np.float32)
        out[self.rows] = self.vectors
        if len(fresh):
            out[self.missing()] = fresh
        return out


def to_embed(inputs: Sequence[str], reused: Reused | None) -> list[str]:
    """Those of a document's ``inputs`` (one per passage) that keep no stored vector, in order."""
    if reused is None:
        return list(inputs)
    return [inputs[i] for i in reused.missing()]


class Reuse:
    """Finds the stored vectors a run's new and changed documents may keep, in ``stores``, whose passages were
    embedded under ``context`` within ``limit`` word pieces (the index's settings); ``stored``: the index's
    documents when the run began, whose content hashes point a renamed or copied file at its old version."""

    def __init__(self, stores: Stores, context: str, limit: int, stored: Iterable[StoredDocument] = ()) -> None:
        self.stores, self.context, self.limit = stores, context, limit
        self.by_content: dict[str, int] = {}
        for doc in stored:
            self.by_content.setdefault(doc.sha256, doc.id)

    def sources(self, sha256: str, replaces: int | None) -> list[int]:
        """The stored documents whose passages a document of content ``sha256`` may keep: the version it replaces
        and one stored document of the same content (a file renamed, moved or copied), where there are."""
        out = [] if replaces is None else [replaces]
        same = self.by_content.get(sha256)
        if same is not None and same not in out:
            out.append(same)
        return out

    def find(self, sha256: str, inputs: Sequence[str], replaces: int | None) -> Reused | None:
        """The stored vectors for those of ``inputs`` (a new document's, one per passage) that a passage of its
        :meth:`sources` was embedded from; ``None`` where none was. Identical inputs take one vector: the encoder
        gives them one."""
        sources = self.sources(sha256, replaces)
        if not sources:
            return None
        wanted = set(inputs)
        passage_of: dict[str, int] = {}
        for pid, text, section, n_tokens in self.stores.passage_parts(sources):
            made = passage_input(text, section, n_tokens, self.context, self.limit)
            if made in wanted:
                passage_of.setdefault(made, pid)
        matched = [(i, passage_of[s]) for i, s in enumerate(inputs) if s in passage_of]
        vectors = self.stores.vectors_of(sorted({pid for _, pid in matched})) if matched else {}
        # Under the writer lock nothing listed goes before its vector is read; were one missing all the same, its
        # passage would be embedded rather than take a wrong vector.
        matched = [(i, pid) for i, pid in matched if pid in vectors]
        if not matched:
            return None
        rows = np.fromiter((i for i, _ in matched), dtype=np.int64, count=len(matched))
        stacked = np.stack([vectors[pid] for _, pid in matched]).astype(np.float32, copy=False)
        return Reused(len(inputs), rows, stacked)
