"""The storage seam itself (store/base.py ``Stores`` and ``Reader``), called directly on each backend through the
``stores`` fixture (tests/conftest.py): the records a backend keeps and what it gives back, whatever engine holds
them."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest

from searchapp.filters import Filter
from searchapp.lines import Place
from searchapp.store.base import Stores
from searchapp.store.rows import NewDocument, dump_metadata
from searchapp.types import Document, ExportedDocument, ExportedPassage, Span
from tests.conftest import FakeEncoder, small_fetches


def new_document(path: str, text: str, cuts: list[int], *, source: str = "text", title: str = "",
                 metadata: dict[str, object] | None = None, mtime: float = 0.0) -> NewDocument:
    """``text`` as a document whose passages run between consecutive ``cuts`` (character offsets), embedded with
    the fake encoder."""
    spans = [Span(a, b, len(text[a:b].split())) for a, b in zip(cuts, cuts[1:], strict=False)]
    body = text.encode("utf-8")
    doc = Document(path=path, title=title, text=text, mtime=mtime, size=len(body),
                   sha256=hashlib.sha256(body).hexdigest(), metadata=metadata or {}, source=source)
    return NewDocument(doc, spans, FakeEncoder().encode([text[s.start : s.end] for s in spans]))


KEYS = "Rotate the signing keys every quarter. Old keys stay valid for a week."
FRUIT = "Bananas are yellow. Apples are red or green."


def write(stores: Stores, remove: list[int], add: list[NewDocument]) -> None:
    with stores.writing():
        stores.write(remove=remove, add=add)
        stores.flush()


def test_a_fresh_index_holds_nothing_but_its_settings(stores: Stores) -> None:
    assert stores.is_empty() and stores.counts() == (0, 0)
    assert stores.documents() == {} and stores.document_ids(["a"]) == {} and stores.passage_documents() == {}
    assert stores.document_passages("a", 0, 10) is None
    assert list(stores.export()) == []
    settings = stores.settings()
    assert settings["dimension"] == str(FakeEncoder.dimension)
    stores.put_settings({"dimension": settings["dimension"], "a_setting": '"x"'})
    assert stores.settings() == {**settings, "a_setting": '"x"'}


def test_write_adds_documents_with_their_passages_and_removes_them(stores: Stores) -> None:
    keys = new_document("/docs/keys.md", KEYS, [0, 38, len(KEYS)], source="file", title="Keys",
                        metadata={"team": "security"}, mtime=1234.5)
    write(stores, [], [keys, new_document("fruit", FRUIT, [0, len(FRUIT)])])
    assert not stores.is_empty() and stores.counts() == (2, 3)
    docs = stores.documents()
    assert set(docs) == {"/docs/keys.md", "fruit"}
    k = docs["/docs/keys.md"]
    assert (k.path, k.mtime, k.size, k.sha256, k.source, k.title) == (
        "/docs/keys.md", 1234.5, keys.document.size, keys.document.sha256, "file", "Keys")
    assert k.metadata == dump_metadata({"team": "security"}) and k.indexed_at is not None
    ids = stores.document_ids(["/docs/keys.md", "fruit", "nope"])
    assert ids == {"/docs/keys.md": k.id, "fruit": docs["fruit"].id}
    assert stores.document_ids(["/docs/keys.md", "fruit"], source="text") == {"fruit": docs["fruit"].id}

    owners = stores.passage_documents()
    assert sorted(owners.values()) == ["/docs/keys.md", "/docs/keys.md", "fruit"]
    with stores.reader() as reader:
        records = reader.hydrate([*owners, 10**9])
    assert set(records) == set(owners)  # an unknown id is left out
    for pid, rec in records.items():
        text = KEYS if rec.path == "/docs/keys.md" else FRUIT
        assert (rec.id, rec.path, text[rec.start : rec.end]) == (pid, owners[pid], rec.text)
    first = next(r for r in records.values() if r.path == "/docs/keys.md" and r.start == 0)
    assert (first.title, first.metadata, first.source, first.end) == ("Keys", {"team": "security"}, "file", 38)

    part = stores.document_passages("/docs/keys.md", 40, 50)  # overlaps the second passage only
    assert part is not None
    assert (part.path, part.title, part.source, part.metadata, part.n_chars) == (
        "/docs/keys.md", "Keys", "file", {"team": "security"}, len(KEYS))
    assert [(p.start, p.end, p.text) for p in part.passages] == [(38, len(KEYS), KEYS[38:])]
    # The passage before the range comes apart from those in it: where the whitespace at its edge begins.
    assert part.previous is not None and (part.previous.start, part.previous.end) == (0, 38)
    assert part.following is None
    whole = stores.document_passages("/docs/keys.md", 0, len(KEYS))
    assert whole is not None and [(p.start, p.end) for p in whole.passages] == [(0, 38), (38, len(KEYS))]
    assert [(p.line, p.column) for p in whole.passages] == [(1, 1), (1, 39)]  # counted as the document was written
    assert whole.previous is None and whole.following is None
    first_only = stores.document_passages("/docs/keys.md", 0, 10)
    assert first_only is not None and first_only.following is not None and first_only.following.start == 38

    # A new version replaces the old in one write; passage ids are never reused.
    write(stores, [k.id], [new_document("/docs/keys.md", FRUIT + " " + KEYS, [0, len(FRUIT) + 1 + len(KEYS)],
                                        source="file")])
    assert stores.counts() == (2, 2)
    again = stores.passage_documents()
    assert min(p for p, path in again.items() if path == "/docs/keys.md") > max(owners)
    write(stores, [stores.documents()["fruit"].id], [])
    assert stores.counts() == (1, 1) and set(stores.documents()) == {"/docs/keys.md"}


def test_touch_and_set_metadata_change_only_what_they_name(stores: Stores) -> None:
    write(stores, [], [new_document("/docs/keys.md", KEYS, [0, len(KEYS)], source="file", title="Keys",
                                    mtime=10.0)])
    before = stores.documents()["/docs/keys.md"]
    [pid] = stores.passage_documents()
    with stores.writing():
        stores.touch(before.id, 20.0)
    touched = stores.documents()["/docs/keys.md"]
    assert touched == dataclasses.replace(before, mtime=20.0)  # indexed_at kept
    with stores.writing():
        stores.set_metadata(before.id, {"team": "ops", "year": 2025}, "New title")
    changed = stores.documents()["/docs/keys.md"]
    assert changed == dataclasses.replace(touched, metadata=dump_metadata({"team": "ops", "year": 2025}),
                                          title="New title")
    with stores.reader() as reader:
        rec = reader.hydrate([pid])[pid]
    assert (rec.title, rec.metadata, rec.text) == ("New title", {"team": "ops", "year": 2025}, KEYS)
    assert (rec.line, rec.column) == (1, 1)
    with stores.writing():  # a newer reader records where each passage starts
        stores.touch(before.id, 30.0, starts=[Place(3, 2)])
    with stores.reader() as reader:
        rec = reader.hydrate([pid])[pid]
    assert (rec.line, rec.column, rec.text) == (3, 2, KEYS)
    assert stores.documents()["/docs/keys.md"].mtime == 30.0
    assert stores.counts() == (1, 1)


def test_a_reader_searches_only_what_its_filter_lets_through(stores: Stores) -> None:
    write(stores, [], [new_document("k1", KEYS, [0, 38, len(KEYS)], metadata={"team": "security"}),
                       new_document("f1", FRUIT, [0, len(FRUIT)], metadata={"team": "garden"})])
    owners = stores.passage_documents()
    qvec = FakeEncoder().encode(["signing keys bananas"])[0]
    with stores.reader() as reader:
        assert {owners[p] for p, _ in reader.lexical("signing keys bananas", 10)} == {"k1", "f1"}
        assert len(reader.dense(qvec, 10)) == 3
    with stores.reader(Filter(metadata={"team": "garden"})) as reader:
        lexical = reader.lexical("signing keys bananas", 10)
        dense = reader.dense(qvec, 10)
        cands = reader.gather("signing keys bananas", qvec, 10)
    assert {owners[p] for p, _ in lexical} == {owners[p] for p, _ in dense} == {"f1"}
    assert {owners[p] for p in cands.dense} == {owners[p] for p in cands.lexical} == {"f1"}
    assert all(score > 0 for _, score in lexical)


def test_export_streams_every_document_then_every_passage_from_one_snapshot(
    stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(stores, [], [new_document(f"d{i}", f"note number {i} on keys", [0, 8, 23]) for i in range(4)])
    small_fetches(monkeypatch)
    stream = stores.export(vectors=True)
    first = next(stream)
    write(stores, [], [new_document("late", "a note written meanwhile", [0, 24])])
    rows = [first, *stream]
    docs = [r for r in rows if isinstance(r, ExportedDocument)]
    passages = [r for r in rows if isinstance(r, ExportedPassage)]
    assert rows == docs + passages  # documents first
    assert [d.path for d in docs] == [f"d{i}" for i in range(4)]
    assert [p.id for p in passages] == sorted(p.id for p in passages) and len(passages) == 8
    for p in passages:
        assert p.vector is not None and p.vector.shape == (FakeEncoder.dimension,)
        np.testing.assert_allclose(p.vector, FakeEncoder().encode([p.text])[0], atol=1e-6)
    assert "late" in {r.path for r in stores.export()}
