"""Index round trips with the deterministic fake encoder: incremental ingest, removal, safety checks; on both
backends (``index_at``, tests/conftest.py) where the storage seam is what is tested, on the folder one where its
vector file is."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from searchapp import EncoderMismatchError, Index, IndexConfig, IndexLockedError, IndexNotFoundError
from searchapp.errors import ConfigError, SearchappError
from searchapp.store.folder import VECTORS_NAME

MODES = ("lexical", "dense", "hybrid")


def write_corpus(root: Path) -> None:
    (root / "sub").mkdir(parents=True)
    (root / "keys.md").write_text("# Keys\n\nRotate the signing keys with the rotate command.\n")
    (root / "fruit.txt").write_text("Bananas are yellow. Apples are red or green.\n")
    (root / "sub" / "db.txt").write_text("The database stores passages and vectors.\n")
    (root / "sub" / "net.txt").write_text("Networks route packets between hosts.\n")


def open_index(tmp_path: Path, encoder, **cfg) -> Index:  # type: ignore[no-untyped-def]
    return Index(tmp_path / "ix", create=True, config=IndexConfig.from_flat(**cfg), encoder=encoder)


def paths(hits) -> list[str]:  # type: ignore[no-untyped-def]
    return [Path(h.path).name for h in hits]


def test_ingest_then_query_all_modes(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    write_corpus(tmp_path / "docs")
    with index_at() as ix:
        summary = ix.ingest(tmp_path / "docs")
        assert (summary.added, summary.failed, summary.passages_embedded) == (4, 0, 4)
        for mode in MODES:
            hits = ix.search("rotate signing keys", k=3, mode=mode)
            assert paths(hits)[0] == "keys.md", mode
            assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        hit = ix.search("rotate signing keys", k=1, mode="hybrid")[0]
        assert hit.dense_score is not None and hit.lexical_score is not None
        assert hit.title == "Keys"
        assert Path(hit.path).read_text()[hit.start : hit.end] == hit.text


def test_reingest_unchanged_embeds_nothing(tmp_path: Path, index_location: str, index_at, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    write_corpus(tmp_path / "docs")
    with index_at() as ix:
        ix.ingest(tmp_path / "docs")
    before = fake_encoder.embedded
    with Index(index_location, encoder=fake_encoder) as ix:
        summary = ix.ingest(tmp_path / "docs")
    assert (summary.unchanged, summary.added, summary.passages_embedded) == (4, 0, 0)
    assert fake_encoder.embedded == before


def test_touched_but_identical_file_is_not_reembedded(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    write_corpus(tmp_path / "docs")
    with index_at() as ix:
        ix.ingest(tmp_path / "docs")
        f = tmp_path / "docs" / "fruit.txt"
        os.utime(f, (1, 1))
        summary = ix.ingest(tmp_path / "docs")
    assert (summary.unchanged, summary.passages_embedded) == (4, 0)


def test_edited_file_reembeds_only_its_passages(tmp_path: Path, backend: str, index_at, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    write_corpus(tmp_path / "docs")
    with index_at() as ix:
        ix.ingest(tmp_path / "docs")
        fake_encoder.calls.clear()
        (tmp_path / "docs" / "fruit.txt").write_text("Cherries are dark red. Lemons are sour.\n")
        summary = ix.ingest(tmp_path / "docs")
        assert (summary.updated, summary.unchanged, summary.passages_embedded) == (1, 3, 1)
        # The passage after its section path: a plain-text file's is its title (its name).
        assert fake_encoder.calls == [["fruit\nCherries are dark red. Lemons are sour."]]
        for mode in MODES:
            assert "Bananas" not in " ".join(h.text for h in ix.search("bananas yellow", k=10, mode=mode))
            assert paths(ix.search("cherries lemons", k=1, mode=mode)) == ["fruit.txt"]
        assert ix.stats().passages == 4
        if backend == "folder":  # the vector file beside the database
            assert ix.stores.vectors.count == 4


def test_deleted_file_can_no_longer_be_returned(  # type: ignore[no-untyped-def]
    tmp_path: Path, backend: str, index_location: str, index_at, fake_encoder
) -> None:
    write_corpus(tmp_path / "docs")
    with index_at() as ix:
        ix.ingest(tmp_path / "docs")
        (tmp_path / "docs" / "keys.md").unlink()
        summary = ix.ingest(tmp_path / "docs")
        assert summary.removed == 1
    with Index(index_location, encoder=fake_encoder) as ix:  # and after a restart
        for mode in MODES:
            assert "keys.md" not in paths(ix.search("rotate signing keys", k=10, mode=mode))
        assert ix.stats().documents == 3
        if backend == "folder":  # the vector file beside the database
            assert ix.stores.vectors.count == 3


def test_ingest_of_one_folder_keeps_documents_of_another(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    write_corpus(tmp_path / "docs")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.txt").write_text("Zebras have stripes.\n")
    with index_at() as ix:
        ix.ingest(tmp_path / "docs")
        ix.ingest(tmp_path / "other")
        assert ix.stats().documents == 5
        summary = ix.ingest(tmp_path / "docs" / "sub")
        assert (summary.removed, summary.unchanged) == (0, 2)


def test_bad_files_are_skipped_with_reasons(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    write_corpus(tmp_path / "docs")
    (tmp_path / "docs" / "empty.txt").write_bytes(b"")
    (tmp_path / "docs" / "binary.txt").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "docs" / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    (tmp_path / "docs" / "broken.docx").write_bytes(b"PK\x03\x04 junk")
    (tmp_path / "docs" / "latin1.txt").write_bytes("Café crème brûlée à la carte, déjà vu.".encode("cp1252"))
    with index_at() as ix:
        summary = ix.ingest(tmp_path / "docs")
        assert summary.added == 5
        reasons = {Path(p).name: r for p, r in summary.failures}
        assert set(reasons) == {"binary.txt", "broken.pdf", "broken.docx"}
        assert all(r and "\n" not in r for r in reasons.values())
        assert summary.skipped["empty"] == 1  # nothing to search in it: skipped, no failure
        hits = ix.search("crème brûlée", k=1, mode="lexical")
        assert paths(hits) == ["latin1.txt"] and "brûlée" in hits[0].text


def test_vector_file_is_rebuilt_from_database(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    write_corpus(tmp_path / "docs")
    with open_index(tmp_path, fake_encoder) as ix:
        ix.ingest(tmp_path / "docs")
        expected = [(h.passage_id, h.score) for h in ix.search("database vectors", k=4, mode="dense")]
    (tmp_path / "ix" / VECTORS_NAME).unlink()
    before = fake_encoder.embedded
    with Index(tmp_path / "ix", encoder=fake_encoder) as ix:
        got = [(h.passage_id, h.score) for h in ix.search("database vectors", k=4, mode="dense")]
    assert [p for p, _ in got] == [p for p, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected])
    assert fake_encoder.embedded == before + 1  # the query only: no passage re-embedded
    assert (tmp_path / "ix" / VECTORS_NAME).exists()


def test_missing_index_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(IndexNotFoundError, match="searchapp ingest"):
        Index(tmp_path / "nope")


def test_encoder_mismatch_refused(tmp_path: Path, index_location: str, index_at, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    write_corpus(tmp_path / "docs")
    with index_at() as ix:
        ix.ingest(tmp_path / "docs")
    with pytest.raises(EncoderMismatchError, match="pooling"):
        Index.open_or_create(index_location, pooling="cls")
    with pytest.raises(ConfigError, match="max_tokens"):
        Index.open_or_create(index_location, max_tokens=128)
    with Index.open_or_create(index_location, pooling="mean", encoder=fake_encoder) as ix:
        assert ix.stats().documents == 4


def test_second_writer_is_refused(tmp_path: Path, index_location: str, index_at, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    write_corpus(tmp_path / "docs")
    with index_at() as ix, ix.writing():
        other = Index(index_location, encoder=fake_encoder)
        with pytest.raises(IndexLockedError):
            other.ingest(tmp_path / "docs")
        other.close()


def test_bad_query_arguments(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with open_index(tmp_path, fake_encoder) as ix:
        with pytest.raises(ConfigError, match="hybrid"):
            ix.search("x", mode="bm25")
        with pytest.raises(ConfigError):
            ix.search("x", alpha=2.0)
        assert ix.search("   ") == []
        with pytest.raises(SearchappError):
            ix.ingest(tmp_path / "does-not-exist")


def test_hybrid_gives_missing_candidates_their_real_scores(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    write_corpus(tmp_path / "docs")
    with open_index(tmp_path, fake_encoder, k0=1) as ix:
        ix.ingest(tmp_path / "docs")
        hits = ix.search("rotate keys bananas", k=4, mode="hybrid")
        q = fake_encoder.encode(["rotate keys bananas"])[0]
        for h in hits:
            vec = ix.stores.vectors.index.reconstruct(h.passage_id)
            assert h.dense_score == pytest.approx(float(np.dot(vec, q)), abs=1e-6)
        lexical = {h.passage_id: h.lexical_score for h in ix.search("rotate keys bananas", k=10, mode="lexical")}
        for h in hits:
            assert h.lexical_score == pytest.approx(lexical.get(h.passage_id, 0.0))


def test_removal_works_with_dotdot_paths_and_respects_filters(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    write_corpus(tmp_path / "docs")
    (tmp_path / "work").mkdir()
    os.chdir(tmp_path / "work")
    with index_at() as ix:
        ix.ingest("../docs")
        # A filtered run neither re-adds nor removes what the filter does not select.
        summary = ix.ingest("../docs", include=["*.md"])
        assert (summary.removed, summary.unchanged) == (0, 1)
        assert ix.stats().documents == 4
        (tmp_path / "docs" / "fruit.txt").unlink()
        summary = ix.ingest("../docs", include=["*.md"])
        assert summary.removed == 0  # fruit.txt is outside this run's filter
        summary = ix.ingest("../docs")
        assert summary.removed == 1
        assert "fruit.txt" not in paths(ix.search("bananas apples", k=10, mode="lexical"))


def test_corrupt_vector_file_is_rebuilt(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    write_corpus(tmp_path / "docs")
    with open_index(tmp_path, fake_encoder) as ix:
        ix.ingest(tmp_path / "docs")
    (tmp_path / "ix" / VECTORS_NAME).write_bytes(b"garbage")
    with Index(tmp_path / "ix", encoder=fake_encoder) as ix:
        assert paths(ix.search("rotate signing keys", k=1, mode="dense")) == ["keys.md"]


def test_long_lived_reader_sees_another_writers_changes(  # type: ignore[no-untyped-def]
    tmp_path: Path, index_location: str, index_at, fake_encoder
) -> None:
    write_corpus(tmp_path / "docs")
    with index_at() as writer:
        writer.ingest(tmp_path / "docs")
    reader = Index(index_location, encoder=fake_encoder)
    assert "zebra.txt" not in paths(reader.search("zebras stripes", k=5, mode="dense"))
    (tmp_path / "docs" / "zebra.txt").write_text("Zebras have black and white stripes.\n")
    (tmp_path / "docs" / "keys.md").unlink()
    with Index(index_location, encoder=fake_encoder) as writer:
        writer.ingest(tmp_path / "docs")
    assert paths(reader.search("zebras stripes", k=1, mode="dense")) == ["zebra.txt"]
    assert len(reader.search("rotate signing keys", k=4, mode="dense")) == 4  # no dangling ids
    reader.close()


def test_unknown_fusion_setting_and_unusable_index_path(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with open_index(tmp_path, fake_encoder) as ix:
        with pytest.raises(ConfigError, match="unknown fusion setting"):
            ix.search("x", fusion="rrf")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ConfigError, match="is a file, not an index folder"):
        Index(tmp_path / "afile", create=True, encoder=fake_encoder)


@pytest.mark.parametrize(
    ("settings", "message"),
    [({"max_tokens": 1000}, "exceeds the limit"), ({"pooling": "layers", "pooling_params": {"layers": -2}}, "layers"),
     ({"pooling": "sbert-wk", "pooling_params": {"layer_start": 9}}, "layer_start")],
)
def test_bad_new_index_settings_fail_before_anything_is_stored(tmp_path: Path, settings, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=message):
        Index.open_or_create(tmp_path / "ix", **settings)
    assert not (tmp_path / "ix").exists()


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "ix").mkdir()
    (tmp_path / "ix" / "index.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(SearchappError, match="cannot open the index database"):
        Index(tmp_path / "ix")


def test_large_index_switches_to_ivf_and_keeps_working(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "many"
    docs.mkdir()
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    for i in range(300):
        (docs / f"d{i:03d}.txt").write_text(f"{words[i % 10]} {words[(i // 10) % 10]} {words[(i // 100) % 10]} n{i}\n")
    with open_index(tmp_path, fake_encoder, ivf_threshold=200) as ix:
        ix.ingest(docs)
        assert ix.stores.vectors.kind == "ivf" and ix.stats().vector_index == "ivf"
        hit = ix.search("n123 bravo charlie", k=1, mode="hybrid")[0]
        assert Path(hit.path).name == "d123.txt"
        (docs / "d123.txt").unlink()
        assert ix.ingest(docs).removed == 1
        assert ix.stores.vectors.count == 299
    with Index(tmp_path / "ix", encoder=fake_encoder) as ix:  # reopened from the file: still IVF, consistent
        assert ix.stores.vectors.kind == "ivf" and ix.stores.vectors.count == 299
        assert "d123.txt" not in paths(ix.search("n123 bravo charlie", k=5, mode="dense"))
        ids = ix.stores.vectors.ids()
        assert len(ids) == 299 and len(set(ids.tolist())) == 299


def test_index_whose_model_folder_moved_still_opens_for_lexical_work(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    from searchapp.encode.catalog import model_dir
    from searchapp.errors import ModelLoadError

    (tmp_path / "mymodel").symlink_to(model_dir("all-MiniLM-L6-v2"), target_is_directory=True)
    write_corpus(tmp_path / "docs")
    with open_index(tmp_path, fake_encoder, model=str(tmp_path / "mymodel")) as ix:
        ix.ingest(tmp_path / "docs")
    (tmp_path / "mymodel").rename(tmp_path / "moved")
    with Index(tmp_path / "ix") as ix:
        assert ix.stats().documents == 4
        assert paths(ix.search("rotate signing keys", k=1, mode="lexical")) == ["keys.md"]
        with pytest.raises(ModelLoadError):
            ix.search("rotate signing keys", k=1, mode="dense")


def _many_texts(ix: Index, start: int, stop: int) -> None:
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    ix.add_texts(
        [f"{words[i % 10]} {words[(i // 10) % 10]} {words[(i // 100) % 10]} n{i}" for i in range(start, stop)],
        ids=[f"t{i}" for i in range(start, stop)],
    )


def test_ivf_retrained_as_the_index_grows_and_exact_again_when_it_shrinks(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    from searchapp.store.vector_policy import auto_nlist

    with open_index(tmp_path, fake_encoder, ivf_threshold=60) as ix:
        _many_texts(ix, 0, 70)
        assert ix.stores.vectors.kind == "ivf"
        first = ix.stores.vectors.index.nlist
        assert first == auto_nlist(70)
        _many_texts(ix, 70, 320)  # auto_nlist doubles by about 4x the vectors
        assert ix.stores.vectors.kind == "ivf" and ix.stores.vectors.index.nlist == auto_nlist(320) >= 2 * first
        assert ix.search("n123 bravo charlie", k=1, mode="dense")[0].path == "t123"
        ix.remove([f"t{i}" for i in range(300)])  # 20 left: under half the threshold
        assert ix.stores.vectors.kind == "flat" and ix.stores.vectors.count == 20
        assert ix.search("n310 bravo delta", k=1, mode="dense")[0].path == "t310"
    with Index(tmp_path / "ix", encoder=fake_encoder) as ix:  # saved that way
        assert ix.stores.vectors.kind == "flat" and ix.stores.vectors.count == 20


def test_missing_vector_file_of_a_large_index_rebuilt_as_ivf_same_results(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with open_index(tmp_path, fake_encoder, ivf_threshold=60, nprobe=10_000) as ix:  # every list probed: exact
        _many_texts(ix, 0, 150)
        before = [ix.search(f"n{i} bravo", k=3, mode="dense") for i in range(0, 150, 15)]
    (tmp_path / "ix" / VECTORS_NAME).unlink()
    with Index(tmp_path / "ix", encoder=fake_encoder) as ix:
        after = [ix.search(f"n{i} bravo", k=3, mode="dense") for i in range(0, 150, 15)]
        assert ix.stores.vectors.kind == "ivf" and ix.stores.vectors.count == 150
    assert [[h.passage_id for h in hits] for hits in after] == [[h.passage_id for h in hits] for hits in before]


def test_a_writer_reloads_a_vector_store_another_process_outdated(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with open_index(tmp_path, fake_encoder) as first:
        first.add_texts([f"alpha note {i}" for i in range(5)], ids=[f"a{i}" for i in range(5)])
        with Index(tmp_path / "ix", encoder=fake_encoder) as other:  # another writer, e.g. a CLI ingest
            other.add_texts([f"bravo memo {i}" for i in range(5)], ids=[f"b{i}" for i in range(5)])
        first.add_texts(["charlie letter"], ids=["c0"])  # must not add to (and save) its old copy
        assert first.stores.vectors.count == 11
        assert {h.path for h in first.search("bravo memo", k=5, mode="dense")} == {f"b{i}" for i in range(5)}
    with Index(tmp_path / "ix", encoder=fake_encoder) as fresh:
        assert fresh.stores.vectors.count == 11


def test_read_only_index_writes_nothing(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with open_index(tmp_path, fake_encoder) as ix:
        ix.add_texts(["alpha note", "bravo memo"], ids=["a", "b"])
    (tmp_path / "ix" / VECTORS_NAME).unlink()
    with Index(tmp_path / "ix", encoder=fake_encoder, read_only=True) as ix:
        assert ix.search("bravo memo", k=1, mode="dense")[0].path == "b"  # rebuilt in memory
        with pytest.raises(ConfigError, match="read-only"):
            ix.add_texts(["charlie"], ids=["c"])
        with pytest.raises(ConfigError, match="read-only"):
            ix.remove(["a"])
    assert not (tmp_path / "ix" / VECTORS_NAME).exists()


def test_a_writer_thread_waits_while_another_thread_of_the_process_holds_the_lock(index_at) -> None:  # type: ignore[no-untyped-def]
    # A reader saving a rebuilt vector file takes the writer lock without waiting; a writer thread meanwhile must
    # wait its turn, not be told that another process is writing.
    import threading
    import time

    with index_at() as ix:
        held, release = threading.Event(), threading.Event()

        def saver() -> None:
            with ix.stores.writing(wait=False):
                held.set()
                release.wait(10)

        result: dict[str, object] = {}

        def writer() -> None:
            try:
                result["summary"] = ix.add_texts(["zebras have stripes"], ids=["z"])
            except Exception as exc:  # noqa: BLE001 - recorded for the assertion below
                result["error"] = exc

        t = threading.Thread(target=saver)
        t.start()
        assert held.wait(10)
        w = threading.Thread(target=writer)
        w.start()
        time.sleep(0.3)
        assert w.is_alive() and not result, result  # waiting, not refused
        release.set()
        w.join(20)
        t.join(20)
        assert "error" not in result and result["summary"].added == 1  # type: ignore[attr-defined]


def test_reopening_with_the_settings_an_index_was_built_with_is_accepted(index_location: str, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    # Each given setting is compared with the built index's, not validated against the defaults on its own.
    with Index.open_or_create(index_location, max_tokens=512, overlap=300, encoder=fake_encoder):
        pass
    with Index.open_or_create(index_location, overlap=300, encoder=fake_encoder) as ix:
        assert ix.config.splitter.overlap == 300
    with pytest.raises(ConfigError, match="overlap=300"):
        Index.open_or_create(index_location, overlap=10, encoder=fake_encoder)
