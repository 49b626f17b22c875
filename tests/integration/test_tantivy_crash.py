"""Crash consistency of the tantivy lexical engine: an ingest SIGKILLed at each of the engine's own commit points
(after the records' commit and before tantivy's, inside tantivy's indexing, between tantivy's commit and its state
file, between the renames that swap a rebuilt index in) leaves an index whose next open finds the lexical index
consistent with SQLite: the same passages, each found by its own words, none that was removed.

One chain of runs over one index, each a real ingest in a child process that kills itself at its point (the
point is a call count of the engine's step, so that it lands where intended whatever the machine's speed); the
corpus changes between runs (documents added, edited, deleted), so kills fall on removals as on additions. After
each kill the index is checked from a copy (so that the next run finds the crashed files untouched); a last run
is let finish and must equal an ingest that never crashed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

pytest.importorskip("tantivy")

from searchapp import Index, IndexConfig  # noqa: E402
from searchapp.store.tantivy_lexical import FOLDER, records_generation  # noqa: E402
from tests.fakes import FakeEncoder  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CHILD = r"""
import os, signal, sys
from pathlib import Path

index, corpus, step, at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

from searchapp import Index, IndexConfig
from searchapp.ingest import pipeline
from searchapp.store import lexical_index, tantivy_lexical
from tests.fakes import FakeEncoder

pipeline.FLUSH_PASSAGES = 3  # a commit every few passages: many commit points in a short ingest
lexical_index.DEFAULT = "tantivy"
calls = [0]


def dying(fn):
    def wrapped(*args, **kwargs):
        calls[0] += 1
        if calls[0] == at:
            os.kill(os.getpid(), signal.SIGKILL)
        return fn(*args, **kwargs)
    return wrapped


engine = tantivy_lexical.TantivyIndex
if step == "os.replace":  # the state file's rename, and the two renames of a rebuilt index's swap
    tantivy_lexical.os = type("os", (), {**vars(os), "replace": staticmethod(dying(os.replace))})
elif step != "none":
    found = vars(engine)[step]
    static = isinstance(found, staticmethod)
    setattr(engine, step, staticmethod(dying(found.__func__)) if static else dying(found))
if len(sys.argv) > 5:  # a run that finds its index behind and rebuilds it first
    (Path(index) / "lexical" / "searchapp-state").unlink(missing_ok=True)
with Index(Path(index), create=True, config=IndexConfig(), encoder=FakeEncoder()) as ix:
    ix.ingest(Path(corpus))
"""

# (step of the engine killed at, its n-th call, whether the run first finds the lexical index behind)
KILLS = [
    ("committed", 2, False),  # the records committed, tantivy not yet: a write's second commit
    ("_add_rows", 3, False),  # inside tantivy's indexing of a commit's passages
    ("_write_state", 2, False),  # tantivy committed, its state file not yet written
    ("committed", 4, False),  # a later run: its commits remove passages of edited and deleted documents
    ("_add_rows", 1, True),  # inside the rebuild of an index found behind
    ("os.replace", 2, True),  # the rebuild's swap: the old index moved aside, the new one not yet in place
    ("os.replace", 3, True),  # the new one renamed into place, the old one not yet removed
    ("_write_state", 3, False),  # between tantivy's commit and the state file, after some commits landed
]


def write_corpus(root: Path, version: int) -> None:
    """Twelve notes, each with a marker word of its own; each version edits two, deletes one and adds two."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for i in range(12 + 2 * version):
        if i % 12 == version % 12 and i < 12 and version:
            continue  # deleted in this version
        edit = f" Revised in version {version}." if i % 5 == version % 5 else ""
        body = " ".join(f"zq{i:03d}x opens this note about {w} and harbour lanterns." for w in range(4))
        (root / f"note{i:03d}.txt").write_text(f"Note {i}\n\n{body}{edit}\n", encoding="utf-8")


def run_child(tmp: Path, index: Path, corpus: Path, step: str, at: int, behind: bool) -> int:
    (tmp / "child.py").write_text(CHILD, encoding="utf-8")
    argv = [sys.executable, str(tmp / "child.py"), str(index), str(corpus), step, str(at)] + (["behind"] * behind)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode in (0, -signal.SIGKILL), res.stderr
    return res.returncode


def lexical_ids(ix: Index) -> list[int]:
    """Every passage id the tantivy index holds (after a read made it ready)."""
    import tantivy

    ix.stores.lexical_index._index.reload()
    searcher = ix.stores.lexical_index._index.searcher()
    hits = searcher.search(tantivy.Query.all_query(), max(searcher.num_docs, 1)).hits
    return sorted(int(i) for i in searcher.fast_field_values("id", [a for _, a in hits]))


def check(folder: Path) -> dict[str, list[int]]:
    """The index in ``folder`` opens and its lexical index holds exactly the stored passages."""
    with Index(folder, encoder=FakeEncoder()) as ix:
        with ix.stores.connect() as conn:
            rows = conn.execute(text(
                "SELECT d.path, p.id FROM passages p JOIN documents d ON d.id = p.document_id ORDER BY p.id")).all()
        docs: dict[str, list[int]] = {}
        for path, pid in rows:
            docs.setdefault(path, []).append(int(pid))
        for path in sorted(docs)[:: max(1, len(docs) // 4)]:
            marker = "zq" + Path(path).stem[4:] + "x"
            assert ix.search(marker, k=3, mode="lexical")[0].path == path
        assert lexical_ids(ix) == sorted(int(r[1]) for r in rows)
        with ix.stores.connect() as conn:
            assert ix.stores.lexical_index._generation == records_generation(conn)
    return docs


@pytest.mark.slow
def test_sigkill_at_each_lexical_commit_point_leaves_the_lexical_index_consistent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from searchapp.store import lexical_index

    monkeypatch.setattr(lexical_index, "DEFAULT", "tantivy")
    index, corpus, copy = tmp_path / "ix", tmp_path / "corpus", tmp_path / "copy"
    killed = []
    for version, (step, at, behind) in enumerate(KILLS):
        write_corpus(corpus, version // 3)
        returncode = run_child(tmp_path, index, corpus, step, at, behind and index.exists())
        killed.append(returncode == -signal.SIGKILL)
        if not (index / "index.db").exists():
            continue
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(index, copy)
        check(copy)
    assert all(killed), killed  # the kills landed
    assert run_child(tmp_path, index, corpus, "none", 0, False) == 0
    clean = tmp_path / "clean"
    with Index(clean, create=True, config=IndexConfig(), encoder=FakeEncoder()) as ix:
        ix.ingest(corpus)
    got, want = check(index), check(clean)
    assert {p: len(ids) for p, ids in got.items()} == {p: len(ids) for p, ids in want.items()}


def test_a_reader_while_another_process_writes_reads_the_disk_index_and_never_rebuilds_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from searchapp.store import lexical_index
    from searchapp.store.folder import LOCK_NAME
    from searchapp.store.lock import FileLock
    from searchapp.store.tantivy_lexical import TantivyIndex

    monkeypatch.setattr(lexical_index, "DEFAULT", "tantivy")
    path = tmp_path / "ix"
    with Index(path, create=True, config=IndexConfig(), encoder=FakeEncoder()) as ix:
        ix.add_texts(["Signing keys rotate monthly.", "The garden shed is green."], ids=["a", "b"])
        # A write whose records committed and whose tantivy commit has not happened yet (a writer mid-way).
        monkeypatch.setattr(TantivyIndex, "committed", lambda self: None)
        ix.add_texts(["Keys of the shed."], ids=["c"])
    monkeypatch.undo()
    monkeypatch.setattr(lexical_index, "DEFAULT", "tantivy")
    rebuilt: list[Any] = []
    rebuild = TantivyIndex._rebuild
    monkeypatch.setattr(TantivyIndex, "_rebuild", lambda self, *a, **k: (rebuilt.append(a), rebuild(self, *a, **k)))
    with FileLock(path / LOCK_NAME).hold(), Index(path, encoder=FakeEncoder()) as reader:
        # The writer holds the lock: the reader answers from the disk's index (without the uncommitted "c").
        assert [h.path for h in reader.search("signing keys", mode="lexical")] == ["a"]
        assert not rebuilt
    with Index(path, encoder=FakeEncoder()) as ix:  # the lock free: a reader catches the index up on disk
        assert "c" in [h.path for h in ix.search("shed keys", mode="lexical")]
        assert len(rebuilt) == 1 and (path / FOLDER).is_dir()
