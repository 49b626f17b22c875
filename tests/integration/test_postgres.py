"""The PostgreSQL backend against a real server (tests/pg_server.py): parity with the folder backend, real BM25,
pgvector's traps, deletes, the writer lock, migrations and schemas. What both backends promise alike (filters,
sources, document text, indexed_at, export, ...) is tested on each by the tests that ask for ``backend``,
``index_location``, ``index_at`` or ``stores`` (tests/conftest.py)."""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from searchapp import Index, IndexConfig, IndexLockedError
from searchapp.errors import ConfigError, IndexNotFoundError, SchemaError
from searchapp.store.postgres import EF_SEARCH_MIN, TEXT_CONFIG
from searchapp.types import ExportedPassage

MODES = ("lexical", "dense", "hybrid")
TEXTS = {
    "keys": "Rotate the signing keys with the rotate command every quarter.",
    "fruit": "Bananas are yellow. Apples are red or green, and pears are green.",
    "db": "The database stores passages, their vectors and a lexical index.",
    "net": "Networks route packets between hosts; routers forward the packets.",
    "garden": "Water the tomatoes deeply twice a week in a dry summer.",
    "locks": "A locksmith cuts keys and fits locks to doors.",
}


class RandomEncoder:
    """Unit vectors drawn from a seed taken from the text: unrelated texts, spread over the sphere."""

    dimension = 16

    def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray:
        out = np.stack([
            np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little"))
            .standard_normal(self.dimension) for t in texts
        ]).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def write_corpus(root: Path) -> None:
    root.mkdir()
    for name, text in TEXTS.items():
        (root / f"{name}.txt").write_text(text + "\n")


def stored(ix: Index) -> dict[str, list[tuple[int, int, str]]]:
    """Each document's passages as (start, end, text), by file name."""
    out: dict[str, list[tuple[int, int, str]]] = {}
    hits = ix.search_batch(list(TEXTS.values()), k=50, mode="dense")
    for h in (h for run in hits for h in run):
        out.setdefault(Path(h.path).name, [])
        if (h.start, h.end, h.text) not in out[Path(h.path).name]:
            out[Path(h.path).name].append((h.start, h.end, h.text))
    return {k: sorted(v) for k, v in out.items()}


def test_a_missing_index_is_not_created_unless_asked(pg_url: str, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(IndexNotFoundError, match="no index at postgresql"):
        Index(pg_url, encoder=fake_encoder)
    with Index(pg_url, create=True, encoder=fake_encoder) as ix:
        assert ix.stats().documents == 0 and ix.is_empty()
    with Index(pg_url, encoder=fake_encoder) as ix:
        assert ix.config.dimension == fake_encoder.dimension


def test_parity_with_the_folder_backend(tmp_path: Path, pg_url: str) -> None:
    write_corpus(tmp_path / "docs")
    config = IndexConfig.from_flat(max_tokens=8)  # several passages a document
    encoder = RandomEncoder()  # no ties between cosines, so the top 10 is one list
    with Index(tmp_path / "ix", create=True, config=config, encoder=encoder) as folder, \
            Index(pg_url, create=True, config=config, encoder=encoder) as pg:
        for ix in (folder, pg):
            summary = ix.ingest(tmp_path / "docs")
            assert (summary.added, summary.failed) == (len(TEXTS), 0)
        assert stored(pg) == stored(folder)
        assert pg.stats().passages == folder.stats().passages > len(TEXTS)
        folder_vecs, pg_vecs = (
            {r.id: r.vector for r in ix.export(vectors=True) if isinstance(r, ExportedPassage)} for ix in (folder, pg))
        assert set(pg_vecs) == set(folder_vecs)  # the same ids, assigned in the same order
        for pid, vec in folder_vecs.items():
            np.testing.assert_allclose(pg_vecs[pid], vec, atol=1e-6)
        for query in ("rotate the signing keys", "green apples", "packets between routers"):
            a = [(h.passage_id, round(h.score, 5)) for h in folder.search(query, k=10, mode="dense")]
            b = [(h.passage_id, round(h.score, 5)) for h in pg.search(query, k=10, mode="dense")]
            assert a == b


def _bm25_reference(conn: sa.Connection, schema: str, query: str) -> dict[int, float]:
    """BM25 over the lexemes of the index's text configuration, with k1 1.2, b 0.75 and Lucene's idf
    ln(1 + (N - df + 0.5) / (df + 0.5)), computed here from to_tsvector's positions; the query's terms are the
    folder backend's FTS5 terms of its words (analysis.fts5_query_terms), a repeated one counted as often. What is
    scored is each passage's lexical field (the FTS5 terms of its section path, a plain-text file's title, then of
    its text: analysis.lexical_fields)."""
    from searchapp.analysis import fts5_query_terms

    cfg = f"{schema}.{TEXT_CONFIG}"
    rows = conn.execute(sa.text(f"SELECT id, to_tsvector('{cfg}', lexical_text)::text FROM {schema}.passages_lexical")
                        ).all()
    docs: dict[int, dict[str, int]] = {}
    for pid, tsv in rows:
        docs[pid] = {m.group(1): len(m.group(2).split(",")) for m in re.finditer(r"'([^']+)':([\d,A-D]+)", tsv)}
    lengths = {pid: sum(tf.values()) for pid, tf in docs.items()}
    avg = sum(lengths.values()) / len(lengths)
    out: dict[int, float] = {}
    for pid, tf in docs.items():
        score = 0.0
        for term in fts5_query_terms(query):
            if term in tf:
                df = sum(1 for d in docs.values() if term in d)
                idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                f = tf[term]
                score += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * lengths[pid] / avg))
        if score > 0:
            out[pid] = score
    return out


# Words that PostgreSQL's parser read otherwise than FTS5's unicode61 (hyphenated words, a number after a hyphen, a
# decimal number, a host name), in passages of under 40 terms (pg_textsearch keeps such lengths exactly) where no
# term is in half of them (FTS5 floors the idf of those): the two engines' BM25 then differ only by their idf
# formulas, which order one term's matches alike, and these queries' matches alike.
TOKEN_TEXTS = {
    "covid": "COVID-19 vaccines reduced severe disease in older adults.",
    "cases": "In 2019 there were 19 reported cases before covid spread widely.",
    "dose": "A dose of 2.5 mg daily was well tolerated.",
    "tablets": "Patients took 2 tablets of 5 mg each with water.",
    "synuclein": "Alpha-synuclein aggregates in Parkinson disease.",
    "helix": "The alpha helix of the synuclein protein folds quickly.",
    "host": "Host names such as example.org resolve through DNS.",
    "running": "Running and walking improve heart health.",
    "fruit": "Bananas are yellow and apples are red.",
    "garden": "Water the tomatoes deeply twice a week.",
}
TOKEN_QUERIES = ("COVID-19", "a 2.5 mg dose", "alpha-synuclein", "example.org", "runs", "covid 19 cases in 2019")


def test_lexical_hits_and_order_are_the_folder_backends(tmp_path: Path, pg_url: str, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    # Fails before PostgreSQL read FTS5's terms: its parser kept "COVID-19" as covid-19, covid and -19 (so the
    # query's 19 missed it and "cases" came first), 2.5 as one number and example.org as one host name.
    with Index(tmp_path / "ix", create=True, encoder=fake_encoder) as folder, \
            Index(pg_url, create=True, encoder=fake_encoder) as pg:
        for ix in (folder, pg):
            ix.add_texts(list(TOKEN_TEXTS.values()), ids=list(TOKEN_TEXTS))
        for query in TOKEN_QUERIES:
            want = [h.path for h in folder.search(query, k=10, mode="lexical")]
            assert want, query
            assert [h.path for h in pg.search(query, k=10, mode="lexical")] == want, query


@pytest.mark.parametrize("mode", ["lexical", "dense"])
def test_a_grouped_search_is_the_folder_backends(tmp_path: Path, pg_url: str, fake_encoder, mode: str) -> None:  # type: ignore[no-untyped-def]
    """Grouping reads each ranked passage's document (``documents_of``) on both backends alike."""
    texts = {"long": "\n\n".join(f"Keys keys keys, item {i}." for i in range(12)),
             "a": "Signing keys are kept in the vault.", "b": "The keys of the shed hang on the door."}
    config = IndexConfig.from_flat(max_tokens=16)
    with Index(tmp_path / "ix", create=True, config=config, encoder=fake_encoder) as folder, \
            Index(pg_url, create=True, config=config, encoder=fake_encoder) as pg:
        for ix in (folder, pg):
            ix.add_texts(list(texts.values()), ids=list(texts))
        want = [(h.path, h.other_passages is not None and len(h.other_passages))
                for h in folder.search("keys", k=3, mode=mode, group_by="document")]
        assert sorted(p for p, _ in want) == sorted(texts) and want[0][1]  # all three, the long one with others
        got = [(h.path, h.other_passages is not None and len(h.other_passages))
               for h in pg.search("keys", k=3, mode=mode, group_by="document")]
        assert got == want


def test_the_text_configuration_keeps_every_fts5_term_whole(pg_url: str, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    # PostgreSQL's default parser under the BM25 index's configuration reads back exactly the FTS5 terms written:
    # none cut further, stemmed, dropped or merged (words with digits, numbers, accented and non-Latin letters,
    # a number's signs and symbols that unicode61 counts as characters of a word). The test server's database is of
    # the C locale, where every non-ASCII character is a letter to the parser.
    from collections import Counter

    from searchapp.analysis import fts5_terms

    text = ("H2O at 1e5 Pa, 007 and 0x1f; ab12cd vs. 3rd-party COVID-19 (2.5 mg) cafe\u0301 naïve Ærø Straße "
            "東京タワー Москва Αθήνα ½ x² Ⅻ \ue000 user@example.org http://example.org/a_b?c=1 v1.2.3 -19 +7 "
            "the a of running")
    terms = fts5_terms([text])[0]
    with Index(pg_url, create=True, encoder=fake_encoder) as ix, ix.stores.engine.connect() as conn:
        cfg = f"{ix.stores.schema}.{TEXT_CONFIG}"
        assert conn.execute(sa.text("SELECT pg_encoding_to_char(encoding), datctype FROM pg_database "
                                    "WHERE datname = current_database()")).one() == ("UTF8", "C")
        read = conn.execute(sa.text("SELECT lexeme, cardinality(positions) FROM unnest(to_tsvector(CAST(:c AS "
                                    "regconfig), :t))"), {"c": cfg, "t": terms}).all()
    assert Counter({lexeme: n for lexeme, n in read}) == Counter(terms.split(" "))
    assert "covid 19 2 5 mg" in terms and "the a of run" in terms


def test_lexical_scores_are_real_bm25(tmp_path: Path, pg_url: str, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    write_corpus(tmp_path / "docs")
    with Index(pg_url, create=True, encoder=fake_encoder) as ix:
        ix.ingest(tmp_path / "docs")
        schema = ix.stores.schema
        for query in ("green apples and pears", "rotate keys", "packets", "the route of the packets",
                      "a packet routes packets"):  # the last: one term twice (packet)
            with ix.stores.write_engine.connect() as conn:
                expected = _bm25_reference(conn, schema, query)
            got = {h.passage_id: h.score for h in ix.search(query, k=20, mode="lexical")}
            assert set(got) == set(expected)
            for pid, score in expected.items():
                assert got[pid] == pytest.approx(score, rel=1e-5)


def test_scores_stay_right_over_repeated_queries_on_one_process(tmp_path: Path, pg_url: str, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    # pg_textsearch 1.0.0: a backend that wrote to the table scored some later statements wrongly (no rows, or
    # 0 for every row); the store never lets a query use a connection that wrote.
    write_corpus(tmp_path / "docs")
    with Index(pg_url, create=True, encoder=fake_encoder) as ix:
        ix.ingest(tmp_path / "docs")
        first = {m: [(h.passage_id, h.lexical_score) for h in ix.search("rotate keys", k=5, mode=m)] for m in MODES}
        assert first["lexical"] and first["hybrid"][0][1] > 0
        for _ in range(8):
            for mode in MODES:
                again = ix.search("rotate keys", k=5, mode=mode)
                assert [(h.passage_id, h.lexical_score) for h in again] == first[mode]


def test_hybrid_candidates_carry_both_real_scores(tmp_path: Path, index_at, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    # On both backends (``index_at``): the seam's ``gather``.
    write_corpus(tmp_path / "docs")
    with index_at() as ix:
        ix.ingest(tmp_path / "docs")
        query = "rotate the keys of the locks"
        qvec = fake_encoder.encode([query])[0]
        with ix.stores.reader() as reader:
            cands = reader.gather(query, qvec, 3)
            lexical = dict(reader.lexical(query, 100))
            dense = dict(reader.dense(qvec, 100))
        assert set(cands.dense) == set(cands.lexical)
        assert set(cands.dense) == {p for p, _ in sorted(dense.items(), key=lambda x: -x[1])[:3]} | set(
            list(lexical)[:3])
        for pid in cands.dense:
            assert cands.dense[pid] == pytest.approx(dense[pid], abs=1e-6)
            assert cands.lexical[pid] == pytest.approx(lexical.get(pid, 0.0), rel=1e-5)


def test_hnsw_traps_k0_rows_and_narrow_filters(pg_url: str) -> None:
    n = 2000
    texts = [f"item {i}" for i in range(n)]
    metas = [{"cat": "rare" if i % 50 == 0 else "common"} for i in range(n)]  # 2% rare
    encoder = RandomEncoder()
    config = IndexConfig(vector_index="ivf")  # approximate at any size: HNSW on PostgreSQL
    with Index(pg_url, create=True, config=config, encoder=encoder) as ix:
        ix.add_texts(texts, ids=[f"d{i}" for i in range(n)], metadatas=metas)
        assert ix.stats().vector_index == "hnsw"
        q = encoder.encode(["a query"])[0]
        with ix.stores.engine.connect() as conn:  # the trap itself: the default ef_search caps LIMIT 100 at 40
            raw = conn.execute(sa.text("SELECT id FROM passages ORDER BY embedding <#> CAST(:v AS vector) LIMIT 100"),
                               {"v": "[" + ",".join(map(str, q.tolist())) + "]"}).all()
            assert len(raw) == 40
        with ix.stores.reader() as reader:
            reader.dense(q, 10)  # ten asked, the scan still runs at the recall floor
            assert reader.conn.execute(sa.text("SHOW hnsw.ef_search")).scalar() == str(EF_SEARCH_MIN)
        with ix.stores.reader() as reader:
            assert len(reader.dense(q, 100)) == 100
            assert len(reader.gather("item", q, 100).dense) >= 100
        hits = ix.search("a query", k=10, mode="dense", filters={"metadata": {"cat": "rare"}})
        assert len(hits) == 10 and all(h.metadata["cat"] == "rare" for h in hits)
        exact = sorted(((float(encoder.encode([t])[0] @ q), f"d{i}") for i, t in enumerate(texts) if i % 50 == 0),
                       reverse=True)[:10]
        assert [h.path for h in hits] == [d for _, d in exact]


def test_removed_documents_never_come_back_and_bm25_statistics_stay_exact(  # type: ignore[no-untyped-def]
    tmp_path: Path, pg_url: str, fake_encoder
) -> None:
    write_corpus(tmp_path / "docs")
    fresh_url = pg_url.replace("schema=t_", "schema=f_")
    with Index(pg_url, create=True, encoder=fake_encoder) as ix:
        ix.ingest(tmp_path / "docs")
        (tmp_path / "docs" / "locks.txt").unlink()
        (tmp_path / "docs" / "fruit.txt").unlink()
        assert ix.ingest(tmp_path / "docs").removed == 2
        for mode in MODES:
            for query in ("locksmith keys", "green apples"):
                assert not {Path(h.path).name for h in ix.search(query, k=10, mode=mode)} & {"locks.txt", "fruit.txt"}
        after = {Path(h.path).name: h.score for h in ix.search("rotate keys doors", k=10, mode="lexical")}
    with Index(fresh_url, create=True, encoder=fake_encoder) as fresh:  # the remaining files, never deleted
        fresh.ingest(tmp_path / "docs")
        expected = {Path(h.path).name: h.score for h in fresh.search("rotate keys doors", k=10, mode="lexical")}
    assert after.keys() == expected.keys() and after
    for name, score in expected.items():
        assert after[name] == pytest.approx(score, rel=1e-6)


def test_one_writer_at_a_time(pg_url: str, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with Index(pg_url, create=True, encoder=fake_encoder) as a, Index(pg_url, encoder=fake_encoder) as b:
        with a.writing():
            with pytest.raises(IndexLockedError, match="another process is writing"):
                b.add_texts(["x"], ids=["x"])
        assert b.add_texts(["x"], ids=["x"]).added == 1  # released


def test_two_indexes_in_two_schemas_of_one_database(pg_url: str, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    other = pg_url.replace("schema=t_", "schema=o_")
    with Index(pg_url, create=True, encoder=fake_encoder) as a, Index(other, create=True, encoder=fake_encoder) as b:
        a.add_texts(["apples and pears"], ids=["a1"])
        b.add_texts(["keys and locks"], ids=["b1"])
        assert [h.path for h in a.search("keys apples", mode="hybrid")] == ["a1"]
        assert [h.path for h in b.search("keys apples", mode="hybrid")] == ["b1"]
        with a.writing():  # a's lock does not lock b
            assert b.add_texts(["more keys"], ids=["b2"]).added == 1


def test_migrations_on_an_empty_schema_reach_head(pg_server) -> None:  # type: ignore[no-untyped-def]
    from searchapp.store import schema

    engine = sa.create_engine(pg_server.url("searchapp_test"),
                              connect_args={"options": "-csearch_path=m_empty,public"})
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector"))
        conn.execute(sa.text("CREATE SCHEMA m_empty"))
    schema.upgrade(engine)
    assert schema.current_revision(engine) == schema.head_revision()
    with engine.connect() as conn:
        tables = set(conn.execute(sa.text(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'm_empty'")).scalars())
        cols = set(conn.execute(sa.text(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'm_empty' "
            "AND table_name = 'passages'")).scalars())
    assert {"settings", "documents", "passages", "alembic_version"} <= tables
    assert "embedding" in cols and "vector" not in cols
    engine.dispose()


def test_without_pg_textsearch_lexical_is_a_clear_error_and_dense_works(pg_server, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    pg_server.create_database("no_bm25")  # a database of its own: dropping the extension drops its indexes
    pg_url = pg_server.url("no_bm25") + "&schema=ix"
    with Index(pg_url, create=True, encoder=fake_encoder) as ix:
        ix.add_texts(list(TEXTS.values()), ids=list(TEXTS))
        with ix.stores.write_engine.begin() as conn:
            conn.execute(sa.text("DROP EXTENSION pg_textsearch CASCADE"))
    with Index(pg_url, encoder=fake_encoder) as ix:
        for mode in ("lexical", "hybrid"):
            with pytest.raises(ConfigError, match="pg_textsearch"):
                ix.search("rotate keys", mode=mode)
        assert ix.search("rotate keys", mode="dense")[0].path == "keys"


def test_a_long_lived_reader_sees_the_statistics_of_another_process_rebuild(  # type: ignore[no-untyped-def]
    tmp_path: Path, pg_url: str, fake_encoder
) -> None:
    # pg_textsearch 1.0.0 backends keep the corpus statistics they saw before another session's REINDEX: a
    # serving process's pooled connections must not answer with them after a writer elsewhere removed documents.
    write_corpus(tmp_path / "docs")
    fresh_url = pg_url.replace("schema=t_", "schema=r_")
    with Index(pg_url, create=True, encoder=fake_encoder) as writer:
        writer.ingest(tmp_path / "docs")
    with Index(pg_url, encoder=fake_encoder) as reader:
        for _ in range(3):  # warm several pooled connections
            reader.search("rotate keys doors", k=10, mode="lexical")
        (tmp_path / "docs" / "fruit.txt").unlink()
        (tmp_path / "docs" / "net.txt").unlink()
        with Index(pg_url, encoder=fake_encoder) as writer:  # another process, for the reader
            writer.ingest(tmp_path / "docs")
        got = [{Path(h.path).name: h.score for h in reader.search("rotate keys doors", k=10, mode=mode)}
               for mode in ("lexical", "hybrid")]
    with Index(fresh_url, create=True, encoder=fake_encoder) as fresh:
        fresh.ingest(tmp_path / "docs")
        expected = [{Path(h.path).name: h.score for h in fresh.search("rotate keys doors", k=10, mode=mode)}
                    for mode in ("lexical", "hybrid")]
    assert got[0].keys() == expected[0].keys()
    for name, score in expected[0].items():
        assert got[0][name] == pytest.approx(score, rel=1e-6)
    assert list(got[1]) == list(expected[1])


def test_a_reserved_word_is_a_schema_name_like_any_other(pg_server, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    url = pg_server.url("searchapp_test") + "&schema=order"
    with Index(url, create=True, encoder=fake_encoder) as ix:
        ix.add_texts(list(TEXTS.values()), ids=list(TEXTS))
        for mode in MODES:
            assert ix.search("rotate the keys", k=1, mode=mode)[0].path == "keys"


def test_locations_and_their_errors(pg_server) -> None:  # type: ignore[no-untyped-def]
    from searchapp.store.locate import is_postgres

    assert is_postgres("postgres://u@h/db") and is_postgres("postgresql+psycopg2://u@h/db")
    assert not is_postgres("./postgres") and not is_postgres("docs")
    for bad in ("schema=abc%0A", "schema=pg_catalog", "schema=Upper", "pool_size=0"):
        with pytest.raises(ConfigError):
            Index(pg_server.url("searchapp_test") + "&" + bad, create=True)


@pytest.mark.parametrize("given", ["url", "PGOPTIONS", "both"])
def test_libpq_options_and_pgoptions_hold_beside_the_index_s_search_path(
        pg_url: str, fake_encoder, monkeypatch: pytest.MonkeyPatch, given: str) -> None:  # type: ignore[no-untyped-def]
    # options= was refused as an unknown URL parameter, and PGOPTIONS was replaced by the store's own options
    # (issue: hardening, round 4). A search_path the user gives does not move the index's tables.
    url = pg_url
    if given in ("url", "both"):
        url += "&options=-c%20statement_timeout%3D5000%20-csearch_path%3Dpublic"
    if given in ("PGOPTIONS", "both"):
        monkeypatch.setenv("PGOPTIONS", "-c lock_timeout=7000 -c statement_timeout=5000")
    schema = pg_url.rsplit("schema=", 1)[1]
    with Index(url, create=True, encoder=fake_encoder) as ix:
        ix.add_texts(["rotate the signing keys"], ids=["keys"])
        assert ix.search("signing keys", mode="lexical")[0].path == "keys"
        for engine in (ix.stores.engine, ix.stores.write_engine):  # type: ignore[attr-defined]
            with engine.connect() as conn:
                assert conn.execute(sa.text("SHOW statement_timeout")).scalar() == "5s"
                assert conn.execute(sa.text("SHOW search_path")).scalar() == f'"{schema}",public'
                if given != "url":
                    assert conn.execute(sa.text("SHOW lock_timeout")).scalar() == "7s"


def test_queries_without_a_term_and_narrow_lexical_filters(pg_url: str) -> None:
    n = 2000
    texts = [f"common words here, entry {i}" + (" zebra stripes" if i % 50 == 0 else "") for i in range(n)]
    metas = [{"cat": "rare" if i % 50 == 0 else "common"} for i in range(n)]
    with Index(pg_url, create=True, encoder=RandomEncoder()) as ix:
        ix.add_texts(texts, ids=[f"d{i}" for i in range(n)], metadatas=metas)
        assert ix.search("?!", mode="lexical") == []  # no term: nothing to match, as in a folder index
        assert len(ix.search("?!", k=5, mode="hybrid")) == 5  # the dense side's candidates
        hits = ix.search("common words", k=10, mode="lexical", filters={"metadata": {"cat": "rare"}})
        assert len(hits) == 10 and all(h.metadata["cat"] == "rare" for h in hits)
        hits = ix.search("common words", k=10, mode="hybrid", filters={"metadata": {"cat": "rare"}})
        assert len(hits) == 10 and all(h.lexical_score and h.lexical_score > 0 for h in hits)


def test_a_schema_written_by_a_newer_version_is_refused(pg_url: str, fake_encoder) -> None:  # type: ignore[no-untyped-def]

    with Index(pg_url, create=True, encoder=fake_encoder) as ix, ix.stores.write_engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    with pytest.raises(SchemaError, match="newer searchapp"):
        Index(pg_url, encoder=fake_encoder)


def test_an_index_from_before_revision_0004_opens_and_lists_null(pg_url: str, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    from alembic import command

    from searchapp.store import schema

    with Index(pg_url, create=True, encoder=fake_encoder) as ix:
        ix.add_texts(["Rotate the signing keys every quarter."], ids=["keys"])
        name = ix.stores.schema
        # Back to revision 0003 (its alembic_version in the index's schema): the index as that searchapp left it.
        with ix.stores.write_engine.begin() as conn:
            command.downgrade(schema._alembic_config(conn, name), "0003")
        assert schema.current_revision(ix.stores.write_engine, name) == "0003"
        with ix.stores.write_engine.connect() as conn:
            cols = set(conn.execute(sa.text(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = :s "
                "AND table_name = 'documents'"), {"s": name}).scalars())
        assert "indexed_at" not in cols and "metadata" in cols
    with Index(pg_url, encoder=fake_encoder) as ix:
        assert schema.current_revision(ix.stores.write_engine, ix.stores.schema) == schema.head_revision()
        assert [(d.path, d.indexed_at) for d in ix.documents()] == [("keys", None)]
        assert [r.to_dict()["indexed_at"] for r in ix.export() if r.to_dict()["type"] == "document"] == [None]
        assert [h.path for h in ix.search("signing keys", k=1, mode="lexical")] == ["keys"]
        ix.add_texts(["Rotate the signing keys every month."], ids=["keys"])  # new content: now known
        assert all(d.indexed_at is not None for d in ix.documents())


def _lexical_rows(ix: Index) -> tuple[list[Any], str]:
    """Each passage's (text, section, lexical field or None) in id order, and the BM25 index's definition."""
    with ix.stores.write_engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT p.text, p.section, l.lexical_text FROM passages p "
                                    "LEFT JOIN passages_lexical l ON l.id = p.id ORDER BY p.id")).all()
        made = conn.execute(sa.text("SELECT indexdef FROM pg_indexes WHERE schemaname = :s "
                                    "AND indexname = 'passages_bm25'"), {"s": ix.stores.schema}).scalar_one()
    return list(rows), str(made)


def test_an_index_from_before_revision_0009_reads_fts5_terms_once_opened(  # type: ignore[no-untyped-def]
    tmp_path: Path, pg_url: str, fake_encoder
) -> None:
    from alembic import command

    from searchapp.analysis import lexical_fields
    from searchapp.store import schema
    from searchapp.store.locate import index_exists
    from tests.integration.test_passage_sections import _docs

    texts = {**TOKEN_TEXTS, "api": "A text added through the API has no headings."}
    docs = _docs(tmp_path)
    with Index(pg_url, create=True, config=IndexConfig.from_flat(max_tokens=16), encoder=fake_encoder) as ix:
        ix.ingest(docs)
        ix.add_texts(list(texts.values()), ids=list(texts))
        name = ix.stores.schema
        # Back to revision 0008, and its BM25 index as that searchapp's store made it: English snowball over the
        # field of section path and text.
        with ix.stores.write_engine.begin() as conn:
            command.downgrade(schema._alembic_config(conn, name), "0008")
            conn.execute(sa.text(f"CREATE INDEX passages_bm25 ON passages_lexical USING bm25(lexical_text) "
                                 f"WITH (text_config='{name}.searchapp_english')"))
            old = conn.execute(sa.text("SELECT lexical_text FROM passages_lexical WHERE lexical_text LIKE "
                                       "'%COVID-19%'")).scalars().all()
        assert old == [TOKEN_TEXTS["covid"]]  # 0008's field: the text itself
    # Found, and refused read-only (a standby's open) until a writable open migrates it.
    assert index_exists(pg_url)
    with pytest.raises(SchemaError, match="open it once for writing"):
        Index(pg_url, encoder=fake_encoder, read_only=True)
    with Index(tmp_path / "folder", create=True, config=IndexConfig.from_flat(max_tokens=16),
               encoder=fake_encoder) as folder, Index.open_or_create(pg_url, encoder=fake_encoder) as ix:
        assert schema.current_revision(ix.stores.write_engine, name) == schema.head_revision()
        rows, made = _lexical_rows(ix)
        with ix.stores.write_engine.connect() as conn:
            configs = set(conn.execute(sa.text("SELECT c.cfgname FROM pg_ts_config c JOIN pg_namespace n ON "
                                               "n.oid = c.cfgnamespace WHERE n.nspname = :s"), {"s": name}).scalars())
        # The migration's frozen tokenizer agrees with analysis.lexical_fields, section weight included.
        assert len(rows) == ix.stats().passages > len(texts)
        assert [f for _, _, f in rows] == lexical_fields([t for t, _, _ in rows], [s for _, s, _ in rows])
        assert any(s for _, s, _ in rows)
        assert f"{TEXT_CONFIG}'" in made and configs == {TEXT_CONFIG}
        folder.ingest(docs)
        folder.add_texts(list(texts.values()), ids=list(texts))
        for query in (*TOKEN_QUERIES, "checker", "sensible default"):
            assert [h.path for h in ix.search(query, k=10, mode="lexical")] == [
                h.path for h in folder.search(query, k=10, mode="lexical")], query


def test_an_index_from_before_revision_0008_ranks_by_its_sections(tmp_path: Path, pg_url: str, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    from alembic import command

    from searchapp.analysis import lexical_fields
    from searchapp.store import schema
    from tests.integration.test_passage_sections import _docs

    docs = _docs(tmp_path)
    with Index(pg_url, create=True, config=IndexConfig.from_flat(max_tokens=16), encoder=fake_encoder) as ix:
        ix.ingest(docs)
        ix.add_texts(["A text added through the API has no headings."], ids=["api"])
        name = ix.stores.schema
        # Back to revision 0007, and its BM25 index as that searchapp's store made it: over the passages' text.
        with ix.stores.write_engine.begin() as conn:
            command.downgrade(schema._alembic_config(conn, name), "0007")
            conn.execute(sa.text(f"CREATE INDEX passages_bm25 ON passages USING bm25(text) "
                                 f"WITH (text_config='{name}.searchapp_english')"))
        assert schema.current_revision(ix.stores.write_engine, name) == "0007"
    # Opened as an ingest or an eval opens it (an index is found there, though behind this version's schema).
    with Index.open_or_create(pg_url, encoder=fake_encoder) as ix:
        assert schema.current_revision(ix.stores.write_engine, name) == schema.head_revision()
        rows, made = _lexical_rows(ix)
        # Every passage's field is the one the store writes today (the migrations' frozen code agrees with
        # analysis.lexical_fields, SECTION_WEIGHT included), the text's terms alone where there is no section.
        assert [field for _, _, field in rows] == lexical_fields([t for t, _, _ in rows], [s for _, s, _ in rows])
        assert any(s for _, s, _ in rows) and any(not s and field == lexical_fields([t], [""])[0]
                                                  for t, s, field in rows)
        assert "passages_lexical USING bm25 (lexical_text)" in made
        hits = {h.section for h in ix.search("checker", k=10, mode="lexical")}
        assert "Plugins > The checker plugin > Settings" in hits
        assert ix.ingest(docs).unchanged == len(list(docs.iterdir()))
