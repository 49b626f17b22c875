"""Bulk loads into PostgreSQL: binary COPY writes the same rows as the INSERT path, the BM25 index is built after a
first load (and is there even when that load fails), and a halfvec index (``?vector_type=halfvec``) answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from searchapp import Index, IndexConfig
from searchapp.errors import ConfigError
from searchapp.store.postgres import PostgresStores
from searchapp.store.records import Records
from searchapp.store.rows import NewDocument
from searchapp.types import Document, Span
from tests.integration.test_postgres import MODES, RandomEncoder

TEXTS = [
    "plain words here",
    "a tab\there, a newline\nthere and a backslash \\ with 'quotes' and \"doubles\"",
    "accents: café, naïve; CJK 検索; emoji 🔍 and a right-to-left \u05d0\u05d1",
    "\\N looks like COPY's null in text form, and \\. like its end marker",
]


def _documents(dim: int) -> list[NewDocument]:
    rng = np.random.default_rng(7)
    out = []
    for i, text in enumerate(TEXTS):
        vecs = rng.standard_normal((2, dim)).astype(np.float32)
        vecs[1, 0] = np.float32(1e-38)  # a tiny value and a negative zero survive the binary form
        vecs[1, 1] = np.float32(-0.0)
        doc = Document(f"/docs/{i}.txt", f"Title {i} ‘quoted’", text + " " + text, 1.7e9 + i / 3, 1000 + i,
                       f"{i:064x}", metadata={"k": i, "tag": "a\tb"})
        half = len(text)
        out.append(NewDocument(doc, [Span(0, half, 5), Span(half + 1, 2 * half + 1, 5)], vecs,
                               sections=["", "Guide > Part \\ 2"]))
    return out


def _rows(ix: Index) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    with ix.stores.engine.connect() as conn:
        docs = conn.execute(sa.text("SELECT id, path, title, mtime, size, sha256, n_chars, metadata, source "
                                    "FROM documents ORDER BY id")).all()
        passages = conn.execute(sa.text('SELECT id, document_id, ordinal, start, "end", n_tokens, text, section, '
                                        "embedding::text FROM passages ORDER BY id")).all()
    return [tuple(r) for r in docs], [tuple(r) for r in passages]


def _load(url: str) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    with Index(url, create=True, config=IndexConfig(dimension=16), encoder=RandomEncoder()) as ix:
        with ix.writing():
            ix.stores.write(remove=[], add=_documents(16))
            ix.stores.flush()
        return _rows(ix)


def test_copy_writes_the_same_rows_as_insert(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    copied = _load(pg_url)
    with monkeypatch.context() as patch:
        patch.setattr(PostgresStores, "_insert", Records._insert)  # the plain INSERT of every other engine
        inserted = _load(pg_url.replace("&schema=", "&schema=ins_"))
    assert copied == inserted
    assert len(copied[0]) == len(TEXTS) and len(copied[1]) == 2 * len(TEXTS)
    assert any("\\N" in str(row[6]) for row in copied[1])


def test_a_first_load_builds_the_bm25_index_after_its_rows_even_when_it_fails(pg_url: str) -> None:
    with Index(pg_url, create=True, config=IndexConfig(dimension=16), encoder=RandomEncoder()) as ix:
        with pytest.raises(RuntimeError), ix.writing():
            ix.stores.write(remove=[], add=_documents(16)[:2])
            with ix.stores.engine.connect() as conn:  # deferred while the first load runs
                assert conn.execute(sa.text("SELECT to_regclass('passages_bm25')")).scalar_one() is None
            raise RuntimeError("the load stops here")
        assert ix.search("plain words", k=3, mode="lexical")[0].text == "plain words here"
        ix.add_texts(["more plain words"], ids=["t1"])  # not a first load: the index stays and takes the rows
        assert {h.text for h in ix.search("plain words", k=5, mode="lexical")} >= {"more plain words"}


def test_a_halfvec_index_answers_every_mode(pg_url: str) -> None:
    url = pg_url + "&vector_type=halfvec"
    encoder = RandomEncoder()
    texts = [f"entry {i} about {'keys' if i % 3 else 'locks'}" for i in range(400)]
    config = IndexConfig(vector_index="ivf")  # HNSW at any size, over halfvec_ip_ops
    with Index(url, create=True, config=config, encoder=encoder) as ix:
        ix.add_texts(texts, ids=[f"d{i}" for i in range(len(texts))])
        status = ix.stats().to_dict()
        assert status["vector_type"] == "halfvec" and status["vector_index"] == "hnsw"
        with ix.stores.engine.connect() as conn:
            typed = conn.execute(sa.text("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                                         "'passages'::regclass AND attname = 'embedding'")).scalar_one()
            opclass = conn.execute(sa.text("SELECT indexdef FROM pg_indexes WHERE indexname = 'passages_hnsw' "
                                   "AND schemaname = current_schema()")
                                   ).scalar_one()
        assert typed == "halfvec(16)" and "halfvec_ip_ops" in opclass
        for mode in MODES:
            hits = ix.search(texts[5], k=10, mode=mode)
            assert len(hits) == 10
        # Each text's own vector (rounded to float16 as stored) finds it first, at a cosine of 1 within float16.
        hit = ix.search(texts[5], k=1, mode="dense")[0]
        assert hit.path == "d5" and hit.score == pytest.approx(1.0, abs=2e-3)
        stored = ix.stores.vectors_of([hit.passage_id])[hit.passage_id]
        np.testing.assert_array_equal(stored, encoder.encode([texts[5]])[0].astype(np.float16).astype(np.float32))
    with Index(pg_url, encoder=encoder) as ix:  # the choice is the index's: no need to repeat it
        assert ix.stats().to_dict()["vector_type"] == "halfvec"
    with pytest.raises(ConfigError, match="stores halfvec"):
        Index(pg_url + "&vector_type=vector", encoder=encoder)
    with pytest.raises(ConfigError, match="vector_type 'float8'"):
        Index(pg_url.replace("&schema=", "&schema=x_") + "&vector_type=float8", create=True, encoder=encoder)


def test_build_settings_in_the_url_are_checked(pg_url: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="maintenance_work_mem"):
        Index(pg_url + "&maintenance_work_mem=1GB;DROP", create=True, encoder=RandomEncoder())


# Each passed the URL check, then failed at the first build with a long traceback (issue: hardening, round 4):
# out of PostgreSQL's range, or digits of another script (which \d matched).
OUT_OF_RANGE = [
    ("maintenance_work_mem=0", "maintenance_work_mem '0': give a memory size from 1MB to 2147483647kB"),
    ("maintenance_work_mem=99999999999TB", "maintenance_work_mem '99999999999TB': give a memory size from 1MB"),
    ("maintenance_work_mem=%D9%A1%D9%A2", "maintenance_work_mem '\u0661\u0662': give a memory size from 1MB"),
    ("maintenance_work_mem=1023kB", "maintenance_work_mem '1023kB': give a memory size from 1MB"),
    ("max_parallel_maintenance_workers=99999999999999999999",
     "max_parallel_maintenance_workers must be a whole number in [0, 1024], got 99999999999999999999"),
    ("max_parallel_maintenance_workers=%D9%A1", "max_parallel_maintenance_workers must be a whole number in [0, 1024]"),
    ("max_parallel_maintenance_workers=1025", "max_parallel_maintenance_workers must be a whole number in [0, 1024]"),
    ("pool_size=100000000", "pool_size must be a whole number in [1, 1000], got 100000000"),
    ("pool_size=%D9%A1", "pool_size must be a whole number in [1, 1000]"),
]


@pytest.mark.parametrize("parameter, message", OUT_OF_RANGE)
def test_build_settings_out_of_range_are_one_line_before_anything_is_created(
        pg_url: str, tmp_path: Path, parameter: str, message: str) -> None:
    from typer.testing import CliRunner

    from searchapp.cli import app

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("rotate the signing keys")
    res = CliRunner().invoke(app, ["ingest", str(tmp_path / "docs"), "--index", f"{pg_url}&{parameter}"])
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {message}"), lines
    schema = pg_url.rsplit("schema=", 1)[1]
    engine = sa.create_engine(pg_url.rsplit("&schema=", 1)[0])
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT to_regnamespace(:s)"), {"s": schema}).scalar() is None
    engine.dispose()


def test_build_settings_in_range_are_read_as_postgresql_reads_them(pg_url: str) -> None:
    from searchapp.store.postgres.location import build_settings_of, pool_size_of

    assert build_settings_of(pg_url + "&maintenance_work_mem=2GB&max_parallel_maintenance_workers=0") == {
        "maintenance_work_mem": f"{2 * 1024**2}kB", "max_parallel_maintenance_workers": "0"}
    assert build_settings_of(pg_url + "&maintenance_work_mem=1024") == {"maintenance_work_mem": "1024kB"}
    assert build_settings_of(pg_url + "&maintenance_work_mem=2147483647kB&max_parallel_maintenance_workers=1024") \
        == {"maintenance_work_mem": "2147483647kB", "max_parallel_maintenance_workers": "1024"}
    assert pool_size_of(pg_url) == 8 and pool_size_of(pg_url + "&pool_size=1000") == 1000
