"""The FTS5 lexical index against rank_bm25's BM25Okapi, with the same tokens, k1 and b."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi
from sqlalchemy import text

from searchapp import analysis
from searchapp.analysis import fts5_query_terms, fts5_terms, lexical_fields, query_terms, stems
from searchapp.store import lexical
from searchapp.store.rows import NewDocument
from searchapp.store.sqlite import SqliteRecords
from searchapp.types import Document, Span

CORPUS = [
    "The signing keys are rotated every ninety days by the security team.",
    "Passages are split at sentence boundaries and packed up to a token budget.",
    "BM25 ranks passages by term frequency, inverse document frequency and length.",
    "Rotate the database credentials after every incident; rotation is automated.",
    "Dense retrieval embeds questions and passages into the same vector space.",
    "The index keeps vectors in FAISS and passages in SQLite.",
    "Keys, tokens and credentials must never be committed to the repository.",
    "Hybrid ranking combines lexical and dense scores after normalisation.",
    "A long passage about gardening: tomatoes, peppers and beans grow well in summer sun.",
    "Security reviews check that every key rotation is logged.",
]
QUERIES = ["rotate signing keys", "sentence token budget", "dense vector retrieval", "security key rotation logged"]


@pytest.fixture()
def store(tmp_path: Path) -> SqliteRecords:
    meta = SqliteRecords(tmp_path / "index.db")
    items = []
    for i, body in enumerate(CORPUS):
        doc = Document(f"/d/{i}.txt", f"d{i}", body, 0.0, len(body), f"{i:064d}")
        items.append(NewDocument(doc, [Span(0, len(body), 0)], np.zeros((1, 4), np.float32)))
    meta.write(remove=[], add=items)
    return meta


def _fts_tokens(meta: SqliteRecords) -> dict[int, list[str]]:
    """The tokens FTS5 stored for each passage (stemmed, folded), read back through fts5vocab."""
    with meta.engine.begin() as conn:
        conn.execute(text("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, passages_fts, 'instance')"))
        docs: dict[int, list[str]] = defaultdict(list)
        for term, doc in conn.execute(text("SELECT term, doc FROM temp.vocab")):
            docs[int(doc)].append(term)
        conn.execute(text("DROP TABLE temp.vocab"))
    return docs


def _stem(meta: SqliteRecords, query: str) -> list[str]:
    with meta.engine.begin() as conn:
        conn.execute(text("CREATE VIRTUAL TABLE temp.q USING fts5(t, tokenize='porter unicode61 remove_diacritics 2')"))
        conn.execute(text("INSERT INTO temp.q(t) VALUES (:t)"), {"t": " ".join(query_terms(query))})
        conn.execute(text("CREATE VIRTUAL TABLE temp.qv USING fts5vocab(temp, q, 'instance')"))
        terms = [r[0] for r in conn.execute(text("SELECT term FROM temp.qv ORDER BY offset"))]
        conn.execute(text("DROP TABLE temp.qv"))
        conn.execute(text("DROP TABLE temp.q"))
    return terms


@pytest.mark.parametrize("query", QUERIES)
def test_scores_match_rank_bm25(store: SqliteRecords, query: str) -> None:
    docs = _fts_tokens(store)
    ids = sorted(docs)
    reference = BM25Okapi([docs[i] for i in ids], k1=1.2, b=0.75)
    terms = _stem(store, query)
    n_docs = len(ids)
    # The formulas agree while every query term is in fewer than half of the passages (see docs).
    assert all(sum(t in docs[i] for i in ids) < n_docs / 2 for t in terms)
    expected = dict(zip(ids, reference.get_scores(terms), strict=True))
    with store.connect() as conn:
        run = lexical.search(conn, query, k=len(ids))
        every = lexical.scores(conn, query, ids)
    assert len(run) > 0
    for pid, score in run:
        assert score == pytest.approx(expected[pid], rel=1e-6)
    assert [p for p, _ in run] == sorted((p for p in ids if expected[p] > 0), key=lambda p: -expected[p])
    assert every == pytest.approx(expected, rel=1e-6, abs=1e-9)


def test_term_in_most_passages_gets_almost_no_weight(store: SqliteRecords) -> None:
    # FTS5 floors a negative idf at 1e-6 where rank_bm25 uses 0.25 x the mean idf: documented difference.
    with store.connect() as conn:
        run = lexical.search(conn, "the", k=20)
    assert run and all(score < 1e-4 for _, score in run)


def test_query_terms_drop_stopwords_and_quote_operators() -> None:
    assert query_terms("How do I rotate the keys?") == ["rotate", "keys"]
    assert query_terms("the of") == ["the", "of"]
    assert lexical.match_expression(["NEAR", "and"]) == '"NEAR" OR "and"'


def test_remove_unindexes(store: SqliteRecords) -> None:
    docs = store.documents()
    store.write(remove=[docs["/d/0.txt"].id], add=[])
    with store.connect() as conn:
        run = lexical.search(conn, "signing", k=5)
    assert run == []


@pytest.mark.parametrize("query", [*QUERIES, "the", "zzz nothing"])
def test_matches_equal_search_plus_scores(store: SqliteRecords, query: str) -> None:
    ids = [1, 3, 5, 8, 99]
    with store.connect() as conn:
        for _ in range(2):  # the temporary table is emptied between queries
            with lexical.Matches(conn, query, 4) as matches:
                known = matches.scores(ids)
            expected = lexical.search(conn, query, 4)
            assert [p for p, _ in matches.top] == [p for p, _ in expected]
            assert [s for _, s in matches.top] == pytest.approx([s for _, s in expected])
            assert known == pytest.approx(lexical.scores(conn, query, ids))


def test_fts5_terms_are_the_folder_indexs_terms_in_text_order(store: SqliteRecords,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # What PostgreSQL's BM25 field holds: each passage's terms as the folder's FTS5 table stored them, in the
    # text's order (offsets), across batches too; nothing for a text without a term.
    monkeypatch.setattr(analysis, "TERMS_BATCH", 3)
    with store.engine.begin() as conn:
        conn.execute(text("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, passages_fts, 'instance')"))
        stored: dict[int, list[tuple[int, str]]] = defaultdict(list)
        for term, doc, col, offset in conn.execute(text("SELECT term, doc, col, \"offset\" FROM temp.vocab")):
            if col == "text":
                stored[int(doc)].append((int(offset), str(term)))
        conn.execute(text("DROP TABLE temp.vocab"))
    want = [" ".join(term for _, term in sorted(stored[pid])) for pid in sorted(stored)]
    assert fts5_terms([*CORPUS, "", "?!"]) == [*want, "", ""]
    assert fts5_terms(["Alpha-synuclein in COVID-19, 2.5 mg"]) == ["alpha synuclein in covid 19 2 5 mg"]


def test_lexical_fields_weigh_the_section_by_repetition() -> None:
    text_terms, section_terms = fts5_terms(["Every setting has a default.", "Plugins > The checker"])
    fields = lexical_fields(["Every setting has a default.", "No section here.", ""],
                            ["Plugins > The checker", "", "Only a heading"])
    assert fields[0] == " ".join([section_terms] * analysis.SECTION_WEIGHT + [text_terms])
    assert fields[1] == fts5_terms(["No section here."])[0]
    assert fields[2] == " ".join([fts5_terms(["Only a heading"])[0]] * analysis.SECTION_WEIGHT)


def test_fts5_query_terms_are_the_stems_of_the_query_words_as_fts5_ors_them() -> None:
    # Each word's stems, a shared one twice (FTS5 scores each quoted word of the OR, so counts it twice too).
    assert fts5_query_terms("How do I rotate the rotating keys?") == ["rotat", "rotat", "kei"]
    assert fts5_query_terms("the of") == ["the", "of"]
    assert fts5_query_terms("?!") == []
    assert fts5_query_terms("COVID-19") == [t for found in stems(["covid", "19"]) for t in found]


@pytest.mark.parametrize("query", QUERIES)
def test_idf_is_the_one_bm25_weighs_by(store: SqliteRecords, query: str) -> None:
    docs = _fts_tokens(store)
    reference = BM25Okapi([docs[i] for i in sorted(docs)], k1=1.2, b=0.75)
    with store.connect() as conn:
        got = lexical.idf(conn, query)
    # Every term here is one FTS5 term in fewer than half of the passages, where both formulas agree.
    assert list(got) == query_terms(query)
    assert got == pytest.approx({t: reference.idf[s] for t, s in zip(got, _stem(store, query), strict=True)})


def test_idf_of_a_term_in_most_passages_is_fts5s_floor(store: SqliteRecords) -> None:
    with store.connect() as conn:
        assert lexical.idf(conn, "the") == {"the": 1e-6}
        assert lexical.idf(conn, "zzz") == {"zzz": pytest.approx(np.log((len(CORPUS) + 0.5) / 0.5))}
        assert lexical.idf(conn, "?!") == {}
