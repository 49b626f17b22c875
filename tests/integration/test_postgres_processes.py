"""The PostgreSQL backend across processes: an ingest killed mid-way, stateless serving replicas, and hybrid
results beside the folder backend's with the real model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from searchapp import Index
from tests.conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import sys, time
sys.path.insert(0, {root!r})
import searchapp.ingest.pipeline as pipeline
pipeline.FLUSH_PASSAGES = 6  # several commits for a small corpus
from searchapp.store.postgres import PostgresStores
real_write = PostgresStores.write
def write(self, remove, add):
    real_write(self, remove, add)
    print("committed", len(add), flush=True)
    time.sleep(0.3)
PostgresStores.write = write
from tests.conftest import FakeEncoder
from searchapp import Index, IndexConfig
with Index.open_or_create({url!r}, encoder=FakeEncoder(), max_tokens=16) as ix:
    ix.ingest({folder!r})
print("done", flush=True)
"""


def write_corpus(root: Path, n: int = 24) -> None:
    root.mkdir()
    for i in range(n):
        sentences = " ".join(f"Document {i} sentence {j} talks about topic {i % 5} and item {j}." for j in range(4))
        (root / f"doc{i:02d}.txt").write_text(sentences + "\n")


def passages_by_document(ix: Index) -> dict[str, list[tuple[int, int]]]:
    with ix.stores.engine.connect() as conn:
        from sqlalchemy import text

        rows = conn.execute(text('SELECT d.path, p.start, p."end" FROM passages p JOIN documents d '
                                 "ON d.id = p.document_id ORDER BY d.path, p.ordinal")).all()
    out: dict[str, list[tuple[int, int]]] = {}
    for path, start, end in rows:
        out.setdefault(Path(path).name, []).append((start, end))
    return out


def test_sigkill_during_an_ingest_leaves_whole_documents_and_the_next_run_resumes(
    tmp_path: Path, pg_url: str, fake_encoder  # type: ignore[no-untyped-def]
) -> None:
    folder = tmp_path / "docs"
    write_corpus(folder)
    clean_url = pg_url.replace("schema=t_", "schema=c_")
    with Index.open_or_create(clean_url, encoder=fake_encoder, max_tokens=16) as clean:
        clean.ingest(folder)
        reference = passages_by_document(clean)
    child = CHILD.format(root=str(ROOT), url=pg_url, folder=str(folder))
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    commits = 0
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("committed"):
            commits += 1
            if commits == 3:
                os.kill(proc.pid, signal.SIGKILL)
                break
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    with Index(pg_url, encoder=fake_encoder) as ix:
        partial = passages_by_document(ix)
        assert 0 < len(partial) < len(reference)
        for name, spans in partial.items():  # every stored document is whole
            assert spans == reference[name]
        summary = ix.ingest(folder)  # resumes: embeds exactly the documents that are missing
        missing = set(reference) - set(partial)
        assert summary.added == len(missing) and summary.unchanged == len(partial)
        assert summary.passages_embedded == sum(len(reference[n]) for n in missing)
        assert passages_by_document(ix) == reference


@pytest.mark.slow
def test_two_serving_replicas_over_one_database(pg_url: str) -> None:
    httpx = pytest.importorskip("httpx", reason="httpx (test extra) is not installed")
    pytest.importorskip("fastapi", reason="the server extra is not installed")
    from tests.server_helpers import free_port

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cli = [sys.executable, "-m", "searchapp", "serve", "--index", pg_url]
    ports = [free_port(), free_port()]
    # Created once (the real model gives the dimension), then served twice; fp32 stored, so both replicas embed
    # queries alike ("auto" is decided per process, by a timing).
    with Index.open_or_create(pg_url, precision="fp32"):
        pass
    procs = [subprocess.Popen([*cli, "--port", str(p)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=env) for p in ports]
    try:
        urls = [f"http://127.0.0.1:{p}" for p in ports]
        for url, proc in zip(urls, procs, strict=True):
            deadline = time.monotonic() + 90
            while True:
                try:
                    httpx.get(f"{url}/status", timeout=2)
                    break
                except httpx.TransportError:
                    assert proc.poll() is None, proc.communicate()[1]
                    assert time.monotonic() < deadline, "serve did not start"
                    time.sleep(0.2)
        docs = [{"id": "keys", "text": "Rotate the signing keys every quarter with keyctl."},
                {"id": "garden", "text": "Water the tomatoes deeply twice a week in summer."},
                {"id": "locks", "text": "A locksmith cuts keys and fits locks."}]
        r = httpx.post(f"{urls[0]}/documents", json={"documents": docs}, timeout=120)
        assert r.status_code == 200 and r.json()["added"] == 3
        body = {"query": "how do I rotate the signing keys?", "k": 3}
        for mode in ("lexical", "dense", "hybrid"):
            a = httpx.post(f"{urls[0]}/search", json={**body, "mode": mode}, timeout=60).json()
            b = httpx.post(f"{urls[1]}/search", json={**body, "mode": mode}, timeout=60).json()
            assert a == b and a["hits"][0]["path"] == "keys"  # what one replica ingested, the other answers at once
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait(timeout=30)
        for _ in range(3):
            r = httpx.post(f"{urls[1]}/search", json={**body, "mode": "hybrid"}, timeout=60)
            assert r.status_code == 200 and r.json()["hits"][0]["path"] == "keys"
        assert httpx.get(f"{urls[1]}/status", timeout=10).json()["documents"] == 3
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)


@pytest.mark.slow
def test_hybrid_results_agree_with_the_folder_backend_on_real_queries(
    tmp_path: Path, pg_url: str, real_encoder  # type: ignore[no-untyped-def]
) -> None:
    corpus_file = SHARED_DATA / "scifact" / "corpus.jsonl"
    if not corpus_file.exists():
        pytest.skip("../shared/data/scifact is not here")
    docs = [json.loads(line) for line in corpus_file.open().readlines()[:300]]
    queries = [json.loads(line)["text"] for line in (SHARED_DATA / "scifact" / "queries.jsonl").open()][:40]
    records = [(d["_id"], d["title"], f"{d['title']}\n\n{d['text']}") for d in docs]
    overlaps = []
    with Index(tmp_path / "ix", create=True, encoder=real_encoder) as folder, \
            Index(pg_url, create=True, encoder=real_encoder) as pg:
        for ix in (folder, pg):
            ix.ingest_records(records)
        a_runs = folder.search_batch(queries, k=10, mode="hybrid")
        b_runs = pg.search_batch(queries, k=10, mode="hybrid")
        d_a = folder.search_batch(queries, k=10, mode="dense")
        d_b = pg.search_batch(queries, k=10, mode="dense")
    for a, b in zip(d_a, d_b, strict=True):
        assert [h.passage_id for h in a] == [h.passage_id for h in b]
    for a, b in zip(a_runs, b_runs, strict=True):
        overlaps.append(len({h.passage_id for h in a} & {h.passage_id for h in b}))
    # FTS5 (Porter, a short stopword list, idf floored) and pg_textsearch (english snowball stemmer and
    # stopwords, Lucene idf) tokenise and weigh differently; the hybrid top 10 must still mostly agree.
    assert sum(overlaps) / len(overlaps) >= 9.0, overlaps
