"""A large index scores a query's lexical side in parts, each over a range of ids on its own connection and
thread (store/folder.py, store/lexical.py): the hits, their order and their scores are the one-part ones, in
lexical and hybrid search, with and without a filter."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from searchapp import Index
from searchapp.store import folder, lexical, lexical_index

WORDS = ("key rotation signing vault token secret audit cluster replica shard index query passage vector "
         "garden tomato pepper bean summer winter river bridge").split()
QUERIES = ["signing key rotation", "vault token secret", "tomato garden summer", "replica shard cluster index",
           "river", "nothing matches this xylophone"]


@pytest.fixture()
def index(tmp_path: Path, fake_encoder, monkeypatch: pytest.MonkeyPatch) -> Index:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(lexical_index, "DEFAULT", "fts5")  # FTS5's scoring in parts, what this file tests
    rng = random.Random(7)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(120)]
    ix = Index(tmp_path / "ix", create=True, encoder=fake_encoder)
    ix.add_texts(texts, ids=[f"t{i}" for i in range(len(texts))], metadatas=[{"half": i % 2} for i in range(120)])
    yield ix
    ix.close()


def _hits(ix: Index, mode: str, **options: object) -> list[list[tuple[int, float | None, float | None, float]]]:
    return [[(h.passage_id, h.lexical_score, h.dense_score, h.score) for h in ix.search(q, k=30, mode=mode, **options)]
            for q in QUERIES]


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
@pytest.mark.parametrize("filters", [None, {"metadata": {"half": 1}}])
def test_parts_rank_as_one(index: Index, monkeypatch: pytest.MonkeyPatch, mode: str, filters: object) -> None:
    whole = _hits(index, mode, filters=filters)
    monkeypatch.setattr(folder, "PARALLEL_MIN", 1)
    monkeypatch.setattr(folder, "_cores", lambda: 4)
    with index.stores.reader(dense=mode != "lexical") as reader:
        assert len(reader.parts) == (4 if mode == "lexical" else 3)  # the parts are really taken
    assert _hits(index, mode, filters=filters) == whole
    assert any(whole), "the queries must find something"


def test_parts_cover_every_id_once(index: Index) -> None:
    with index.stores.connect() as conn:
        ids = [r[0] for r in conn.exec_driver_sql("SELECT id FROM passages")]
        for n in (1, 2, 3, 7, 500):
            ranges = lexical.parts(conn, n)
            if n == 1:
                assert ranges == [None]
                continue
            assert len(ranges) == min(n, max(ids) - min(ids) + 1)
            inside = [sum(lo <= i <= hi for lo, hi in ranges) for i in ids]  # type: ignore[misc]
            assert inside == [1] * len(ids)


def test_a_failed_part_leaves_no_matches_behind(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(folder, "PARALLEL_MIN", 1)
    monkeypatch.setattr(folder, "_cores", lambda: 3)
    real = lexical.Matches.__init__
    calls = []

    def flaky(self, conn, query, k, restrict=None, part=None):  # type: ignore[no-untyped-def]
        calls.append(part)
        if len(calls) == 2:
            raise RuntimeError("part failed")
        real(self, conn, query, k, restrict, part)

    monkeypatch.setattr(lexical.Matches, "__init__", flaky)
    with index.stores.reader() as reader:
        with pytest.raises(RuntimeError, match="part failed"):
            reader.gather("signing key", index.encoder.encode(["signing key"])[0], 10)
        made = 0
        for conn, _ in reader.parts:
            if conn.exec_driver_sql("SELECT 1 FROM temp.sqlite_master WHERE name = 'lexical_matches'").first():
                made += 1
                assert conn.exec_driver_sql("SELECT count(*) FROM temp.lexical_matches").scalar() == 0
        assert made == 1
    assert len(calls) == 2  # one part scored, then undone; the other failed


def test_a_hybrid_session_leaves_a_core_to_an_exact_dense_search_only(
    tmp_path: Path, fake_encoder, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    from searchapp import IndexConfig

    # An exact scan is a hybrid query's long pole; an IVF search probes a few lists and leaves the lexical side
    # the long pole, so it gets every core.
    monkeypatch.setattr(folder, "PARALLEL_MIN", 1)
    monkeypatch.setattr(folder, "_cores", lambda: 2)
    monkeypatch.setattr(lexical_index, "DEFAULT", "fts5")
    rng = random.Random(3)
    texts = [" ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(200)]
    for threshold, parts in ((10**6, 1), (60, 2)):
        config = IndexConfig.from_flat(ivf_threshold=threshold, nprobe=10_000)  # every list probed: exact answers
        with Index(tmp_path / str(threshold), create=True, config=config, encoder=fake_encoder) as ix:
            ix.add_texts(texts, ids=[f"t{i}" for i in range(len(texts))])
            assert ix.stores.vectors.kind == ("flat" if threshold > 200 else "ivf")
            with ix.stores.reader(dense=True) as reader:
                assert len(reader.parts) == parts
            with ix.stores.reader(dense=False) as reader:
                assert len(reader.parts) == 2
            monkeypatch.setattr(folder, "_cores", lambda: 1)
            one = _hits(ix, "hybrid")
            monkeypatch.setattr(folder, "_cores", lambda: 2)
            assert _hits(ix, "hybrid") == one and any(one)
