"""Crash consistency: ``searchapp ingest`` killed with SIGKILL at twelve points of a real ingest, one at each of
its write steps.

One chain of runs over the same corpus and index: each run of the real CLI, with the real model, is killed at
its point (during start-up, while the model loads, while a group of passages is embedded, just after a group
is committed, while the vector file is rewritten, ...); the index left behind is then opened (from a copy, so
that the next run finds the crashed files untouched) and must answer queries, hold only whole documents, and
have FAISS agree with SQLite. A last run is let finish. It must then equal an ingest that never crashed, and
no run may have embedded a passage of a document committed before it started.

The runs go through a small wrapper around ``searchapp.cli.main`` that changes two pacing constants and logs
what happens, without changing what the ingest does: groups of 16 passages instead of 512 (so a short ingest
has some thirty commits to land between) and a vector file rewrite at most every 2 s instead of every 30 s.
Each log line is one ``write(2)`` in append mode, so a kill never loses a line already written. The log says
when each group starts to be embedded (with a hash of each text) and when it is committed; the kill points are
set from it, so that they fall where intended on a slow machine as on a fast one. The model runs on one thread:
with a second core busy elsewhere, two-thread forward passes were six times slower.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text

from searchapp import Index, IndexConfig
from searchapp.errors import IndexNotFoundError
from searchapp.ingest.sections import passage_inputs
from searchapp.sqlite_driver import dbapi
from searchapp.store.folder import DB_NAME, VECTORS_NAME
from searchapp.store.sqlite import SqliteRecords
from searchapp.types import Span
from tests.consistency import assert_vectors_match_database, check_lexical

MAX_TOKENS = 128
FLUSH_PASSAGES = 16
WRAPPER = r"""
import hashlib, os, sys, time

log_path, args = sys.argv[1], sys.argv[2:]


def log(kind, payload=""):
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, f"{time.monotonic():.6f} {kind} {payload}\n".encode())
    os.close(fd)


from searchapp.ingest import pipeline

pipeline.FLUSH_PASSAGES = int(os.environ["CRASH_TEST_FLUSH"])
pipeline.SAVE_EVERY_S = 2.0

from searchapp.encode.encoder import TorchEncoder
from searchapp.store.sqlite import SqliteRecords

encode, write = TorchEncoder.encode, SqliteRecords.write_rows


def logged_encode(self, texts, truncate=False):
    self.dimension  # loads the model, as encode would first: "encode" marks the start of the embedding itself
    log("encode", " ".join(hashlib.sha1(t.encode()).hexdigest()[:16] for t in texts))
    return encode(self, texts, truncate)


def logged_write(self, remove, add):
    out = write(self, remove, add)
    log("commit", str(len(add)))
    return out


TorchEncoder.encode, SqliteRecords.write_rows = logged_encode, logged_write
log("start")
sys.argv = ["searchapp", *args]
from searchapp.cli import main

main()
"""

WORDS = (
    "river signal kernel harbour lantern copper meadow violin glacier market comet engine orchard quartz "
    "compass ledger beacon canyon falcon timber vessel prism saddle thunder"
).split()


def passage_hash(passage: str) -> str:
    return hashlib.sha1(passage.encode()).hexdigest()[:16]


def write_corpus(root: Path, n_docs: int = 80, seed: int = 3) -> None:
    """Documents of one to a dozen passages; every sentence unique, every document with a word of its own."""
    rng = random.Random(seed)
    root.mkdir()
    for d in range(n_docs):
        sentences = [
            f"Record {d} line {s} says the {' '.join(rng.choices(WORDS, k=rng.randint(6, 14)))}."
            for s in range(rng.randint(4, 80))
        ]
        (root / f"doc{d:03d}.txt").write_text(f"Marker zq{d:03d}x opens this note.\n\n" + " ".join(sentences) + "\n")


@dataclass
class Reference:
    """What an ingest that never crashed stores: per document its sha256 and passages (ordinal, start, end,
    text)."""

    documents: dict[str, tuple[str, list[tuple[int, int, int, str]]]]
    # Per document, what the encoder was given for each passage (its text, after its section path where the
    # index embeds one: ingest/sections.passage_inputs).
    inputs: dict[str, list[str]] = field(default_factory=dict, compare=False)

    @property
    def passages(self) -> int:
        return sum(len(p) for _, p in self.documents.values())

    def hashes(self, paths: set[str]) -> set[str]:
        return {passage_hash(t) for path in paths for t in self.inputs[path]}


def stored_content(ix: Index) -> Reference:
    docs: dict[str, tuple[str, list[tuple[int, int, int, str]]]] = {}
    inputs: dict[str, list[str]] = {}
    with ix.stores.connect() as conn:
        for path, sha in conn.execute(text("SELECT path, sha256 FROM documents")):
            docs[path] = (sha, [])
            inputs[path] = []
        rows = conn.execute(text(
            'SELECT d.path, p.ordinal, p.start, p."end", p.text, p.section, p.n_tokens FROM passages p JOIN '
            "documents d ON d.id = p.document_id ORDER BY d.path, p.ordinal"
        ))
        for path, ordinal, start, end, body, section, n_tokens in rows:
            docs[path][1].append((ordinal, start, end, body))
            inputs[path] += passage_inputs(body, [Span(0, len(body), n_tokens)], [section],
                                           ix.config.passage_context, ix._limit())
    return Reference(docs, inputs)


def assert_consistent(ix: Index, reference: Reference) -> None:
    """Only whole documents, as a clean ingest stores them; FTS5 and FAISS agree with the passages."""
    content = stored_content(ix)
    for path, (sha, passages) in content.documents.items():
        assert (sha, passages) == reference.documents[path], f"{path} differs from a clean ingest's"
    with ix.stores.engine.begin() as conn:
        check_lexical(ix.stores, conn)
    assert_vectors_match_database(ix)


def assert_answers(ix: Index) -> None:
    paths = sorted(stored_content(ix).documents)
    for mode in ("lexical", "dense", "hybrid"):
        for path in paths[:1] + paths[-1:]:
            marker = "zq" + Path(path).stem[3:] + "x"
            hits = ix.search(f"{marker} opens this note", k=3, mode=mode)
            assert hits and {Path(h.path).name for h in hits} <= {Path(p).name for p in paths}, mode
            if mode == "lexical":
                assert hits[0].path == path
    if not paths:
        assert ix.search("zq000x", k=3, mode="lexical") == []


@dataclass
class Kill:
    """One run of the chain and where its kill landed."""

    trigger: tuple[Any, ...]
    returncode: int | None = None
    committed_before: set[str] = field(default_factory=set)
    committed_after: set[str] = field(default_factory=set)
    encoded: set[str] = field(default_factory=set)  # hashes of the texts this run sent to the encoder
    events: list[str] = field(default_factory=list)
    stale_vector_file: bool = False
    opened: bool = False


def read_log(path: Path) -> list[tuple[float, str, str]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        stamp, kind, *payload = line.split(" ", 2)
        out.append((float(stamp), kind, payload[0] if payload else ""))
    return out


def group_seconds(logs: list[list[tuple[float, str, str]]]) -> float:
    """Median time from a group's encode to its commit in the runs so far (0.5 s before any was seen)."""
    spans = []
    for events in logs:
        sent = None
        for stamp, kind, _ in events:
            if kind == "encode":
                sent = stamp
            elif kind == "commit" and sent is not None:
                spans.append(stamp - sent)
                sent = None
    return statistics.median(spans) if spans else 0.5


def run_until(proc: subprocess.Popen[str], log: Path, db: Path, trigger: tuple[Any, ...], group_s: float) -> None:
    """Wait for the trigger's moment and SIGKILL the run (unless it ended first)."""
    kind, *arg = trigger
    started = time.monotonic()
    deadline = started + 300
    extra = 0.0
    while time.monotonic() < deadline and proc.poll() is None:
        events = [k for _, k, _ in read_log(log)]
        if kind == "time" and time.monotonic() - started >= arg[0]:
            break
        if kind == "db" and db.exists():
            extra = arg[0]
            break
        if kind in ("encode", "commit") and events.count(kind) >= arg[0]:
            extra = arg[1] * group_s
            break
        # The n-th group sent to the encoder after this run's first commit: what "late in a later group" means
        # whatever the timing (counting encode events alone let a run whose first groups were embedded in more
        # than one call reach the count before any commit, and the kill did not land mid-ingest).
        if kind == "encode_past_commit" and "commit" in events and \
                events[events.index("commit"):].count("encode") >= arg[0]:
            extra = arg[1] * group_s
            break
        time.sleep(0.005)
    time.sleep(extra)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def schedule() -> list[tuple[Any, ...]]:
    """Twelve kill points, each at a distinct step of an ingest's writing (or of its start-up before any write),
    in the order the chain of runs meets them. By the clock: in the imports (nothing written), while a new index's
    model loads (its database just made), and at three re-run starts (the vector file checked and rebuilt from
    SQLite, the files walked and split against the stored ones, the model loading). By the log: the n-th group of
    this run sent to the encoder or committed, plus a fraction of a group's time: early and late in embedding,
    just after a commit (the vector file not yet rewritten), mid-way to the next commit, and across a vector file
    rewrite (every 2 s here)."""
    return [
        ("time", 0.5),  # imports: nothing written
        ("db", 0.3),  # new index: database made, settings not yet, model loading
        ("encode", 1, 0.5),  # the first group embedding, nothing committed yet
        ("commit", 1, 0.0),  # just after a commit: the vector file behind the database
        ("time", 1.0),  # re-run: the vector file checked against SQLite and rebuilt
        ("commit", 2, 0.6),  # between two commits: the next group being embedded
        ("time", 2.2),  # re-run: files walked, changes detected, new ones split
        ("encode_past_commit", 1, 0.8),  # late in a group's embedding, with a commit of this run behind it
        ("time", 4.0),  # re-run: the model loading
        ("commit", 1, 1.2),  # past a commit, across a vector file rewrite
        ("encode", 1, 0.1),  # the moment a group is sent to the encoder
        ("time", 5.0),  # re-run: start-up's end or the first group
    ]


def copy_index(index: Path, scratch: Path) -> bool:
    """Copy the crashed index's files: the checks open the copy, so that the next run finds them untouched."""
    if scratch.exists():
        shutil.rmtree(scratch)
    if not (index / DB_NAME).exists():
        return False
    shutil.copytree(index, scratch)
    return True


def committed(scratch: Path) -> dict[str, list[int]]:
    """Passage ids of each committed document, read with plain SQLite (opening an Index may write)."""
    if not (scratch / DB_NAME).exists():
        return {}
    conn = dbapi().connect(scratch / DB_NAME)
    try:
        rows = conn.execute(
            "SELECT d.path, p.id FROM passages p JOIN documents d ON d.id = p.document_id ORDER BY p.id"
        ).fetchall()
    except dbapi().OperationalError:  # killed before the schema was made
        rows = []
    finally:
        conn.close()
    out: dict[str, list[int]] = {}
    for path, pid in rows:
        out.setdefault(path, []).append(pid)
    return out


def check_copy(scratch: Path, reference: Reference, encoder: Any, kill: Kill) -> None:
    """The crashed index opens, holds only whole documents, agrees with FAISS and answers queries."""
    if not (scratch / DB_NAME).exists():
        return
    try:
        ix = Index(scratch, encoder=encoder)
    except IndexNotFoundError:
        return  # killed while the index was being created: not an index yet
    with ix:
        kill.opened = True
        n, _ = ix.stores.id_summary()
        kill.stale_vector_file = not (scratch / VECTORS_NAME).exists() or faiss_count(scratch) != n
        assert_consistent(ix, reference)
        assert_answers(ix)


def faiss_count(folder: Path) -> int:
    import faiss

    try:
        return int(faiss.read_index(str(folder / VECTORS_NAME)).ntotal)
    except RuntimeError:
        return -1


@pytest.mark.slow
def test_sigkill_at_each_write_step_leaves_a_consistent_index_and_a_rerun_finishes(
    tmp_path: Path, real_encoder, fake_encoder  # type: ignore[no-untyped-def]
) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus)
    config = IndexConfig.from_flat(max_tokens=MAX_TOKENS)
    with Index(tmp_path / "clean", create=True, config=config, encoder=fake_encoder) as c:
        c.ingest(corpus)
        reference = stored_content(c)
    all_docs = set(reference.documents)
    index = tmp_path / "ix"
    (tmp_path / "wrapper.py").write_text(WRAPPER)
    command = [sys.executable, str(tmp_path / "wrapper.py"), "LOG", "ingest", str(corpus), "--index", str(index),
               "--max-tokens", str(MAX_TOKENS), "--batch-size", "4", "--threads", "1", "--precision", "fp32", "--json"]
    env = {**os.environ, "CRASH_TEST_FLUSH": str(FLUSH_PASSAGES)}
    kills: list[Kill] = []
    logs: list[list[tuple[float, str, str]]] = []
    before: dict[str, list[int]] = {}
    scratch = tmp_path / "check"
    for i, trigger in enumerate(schedule()):
        kill = Kill(trigger, committed_before=set(before))
        log = tmp_path / f"run{i:02d}.log"
        cmd = [log.as_posix() if a == "LOG" else a for a in command]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        run_until(proc, log, index / DB_NAME, trigger, group_seconds(logs))
        kill.returncode = proc.returncode
        out, err = proc.communicate()
        assert proc.returncode == -signal.SIGKILL, f"run {i} {trigger} ended by itself ({proc.returncode}): {err}"
        events = read_log(log)
        logs.append(events)
        kill.events = [k for _, k, _ in events]
        kill.encoded = {h for _, k, payload in events if k == "encode" for h in payload.split()}
        copy_index(index, scratch)
        after = committed(scratch)
        check_copy(scratch, reference, real_encoder, kill)
        kill.committed_after = set(after)
        # What was committed stays committed, as it was: no document lost, none written again.
        assert {p: after.get(p) for p in before} == before, f"run {i} {trigger} changed committed documents"
        # No passage of a document committed before this run was embedded again.
        assert not kill.encoded & reference.hashes(kill.committed_before), f"run {i} {trigger} re-embedded"
        kills.append(kill)
        before = after

    final_log = tmp_path / "final.log"
    res = subprocess.run([final_log.as_posix() if a == "LOG" else a for a in command], env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    left = all_docs - set(before)
    # The last run embeds exactly the passages of the documents not yet committed, nothing else.
    encoded = {h for _, k, payload in read_log(final_log) if k == "encode" for h in payload.split()}
    assert encoded == reference.hashes(left)
    assert summary["passages_embedded"] == sum(len(reference.documents[p][1]) for p in left)
    assert summary["added"] == len(left) and summary["unchanged"] == len(all_docs) - len(left)

    with Index(index, encoder=real_encoder) as ix:
        assert stored_content(ix).documents == reference.documents  # same documents and passages as a clean run
        assert_consistent(ix, reference)
        assert_answers(ix)
        # The vectors are the model's for their passages (a sample, against the model loaded here).
        with ix.stores.connect() as conn:
            rows = conn.execute(text("SELECT text, vector, section, n_tokens FROM passages")).all()
        stored_vectors = {t: v for t, v, _, _ in rows}
        # What the encoder saw of each: the passage after its section path (ingest/sections.passage_inputs).
        seen = {t: passage_inputs(t, [Span(0, len(t), n)], [sec], ix.config.passage_context, ix._limit())[0]
                for t, _, sec, n in rows}
        sample = sorted(stored_vectors)[::20]
        fresh = real_encoder.encode([seen[t] for t in sample])
        got = np.stack([np.frombuffer(stored_vectors[t], dtype=np.float32) for t in sample])
        assert float(np.min(np.sum(fresh * got, axis=1))) > 0.99

    # Where the kills landed: each kind several times, or the test did not test what it claims.
    startup = [k for k in kills if not k.encoded]
    embedding = [k for k in kills if k.encoded - reference.hashes(k.committed_after)]
    mid_ingest = [k for k in kills if k.committed_after - k.committed_before and k.committed_after != all_docs]
    report = "\n".join(
        f"{k.trigger}: committed {len(k.committed_before)}->{len(k.committed_after)} of {len(all_docs)}, "
        f"events {k.events.count('encode')} encode / {k.events.count('commit')} commit, "
        f"opened {k.opened}, stale vector file {k.stale_vector_file}"
        for k in kills
    )
    assert len(kills) == len(schedule())
    assert len(startup) >= 4, report
    assert len(embedding) >= 3, report
    assert len(mid_ingest) >= 4, report
    assert sum(k.stale_vector_file for k in kills) >= 2, report  # recovery of the vector file was exercised


def test_a_creation_killed_before_its_settings_were_stored_is_created_again(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    # The state a kill leaves while a new index's model loads: the database and its schema exist, the settings
    # (written once the model's dimension is known) do not.
    (tmp_path / "ix").mkdir()
    SqliteRecords(tmp_path / "ix" / DB_NAME).close()
    with pytest.raises(IndexNotFoundError):
        Index(tmp_path / "ix", encoder=fake_encoder)  # not an index yet, and a reader does not make it one
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Rotate the signing keys every quarter.\n")
    with Index.open_or_create(tmp_path / "ix", max_tokens=MAX_TOKENS, encoder=fake_encoder) as ix:
        assert ix.config.splitter.max_tokens == MAX_TOKENS  # the settings asked for, not the defaults
        assert ix.ingest(docs).added == 1
    with Index.open_or_create(tmp_path / "ix", max_tokens=MAX_TOKENS, encoder=fake_encoder) as ix:
        assert ix.stats().documents == 1


@pytest.mark.parametrize("kept", [0.0, 0.1, 0.5, 0.99])
def test_a_vector_file_written_half_way_is_detected_and_rebuilt(tmp_path: Path, fake_encoder, kept: float) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    write_corpus(docs, n_docs=12)
    config = IndexConfig.from_flat(max_tokens=MAX_TOKENS)
    with Index(tmp_path / "ix", create=True, config=config, encoder=fake_encoder) as ix:
        ix.ingest(docs)
        reference = stored_content(ix)
    vector_file = tmp_path / "ix" / VECTORS_NAME
    data = vector_file.read_bytes()
    vector_file.write_bytes(data[: int(len(data) * kept)])
    calls = len(fake_encoder.calls)
    with Index(tmp_path / "ix", encoder=fake_encoder) as ix:
        assert_consistent(ix, reference)
        assert_answers(ix)
    # Only the queries were encoded: the vectors came back from SQLite, no passage was embedded again.
    assert all(texts[0].endswith("opens this note") for texts in fake_encoder.calls[calls:])
    assert vector_file.read_bytes() == data  # rewritten whole
