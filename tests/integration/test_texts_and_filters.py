"""Texts added through the Python API (ids, metadata, replace, remove) and filtered search, on both backends
(``index_at``, tests/conftest.py) where the storage seam is what is tested."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from searchapp import Filter, Index, IndexConfig
from searchapp.errors import ConfigError
from searchapp.ingest.texts import text_id

MODES = ("lexical", "dense", "hybrid")
TEXTS = {
    "k1": ("Rotate the signing keys with the rotate command.", {"team": "security", "year": 2024}),
    "k2": ("Signing keys expire after a year; rotate them before.", {"team": "security", "year": 2025}),
    "d1": ("The database stores passages and vectors.", {"team": "storage", "year": 2025}),
    "n1": ("Networks route packets between hosts.", {"team": "network", "draft": True}),
}


FILTER_CASES = [
    ({"metadata": {"team": "security"}}, {"k1", "k2"}),
    ({"metadata": {"team": ["storage", "network"]}}, {"d1", "n1"}),
    ({"metadata": {"team": "security", "year": 2025}}, {"k2"}),
    ({"metadata": {"draft": True}}, {"n1"}),
    ({"metadata": {"year": "2025"}}, set()),  # a string never equals the number
    ({"metadata": {"draft": 1}}, set()),  # nor a number the boolean true
    ({"metadata": {"year": [2024, True]}}, {"k1"}),
    ({"metadata": {"year": [2024.0, "x\x00"], "team": ["security", True]}}, {"k1"}),  # 2024 = 2024.0; a NUL: none
    ({"path_prefix": "k"}, {"k1", "k2"}),
    ({"path_glob": "?1"}, {"k1", "d1", "n1"}),
    ({"path_glob": "k*", "metadata": {"year": 2024}}, {"k1"}),
]


def open_index(tmp_path: Path, encoder, **cfg) -> Index:  # type: ignore[no-untyped-def]
    return Index(tmp_path / "ix", create=True, config=IndexConfig.from_flat(**cfg), encoder=encoder)


def add_all(ix: Index) -> None:
    ids = list(TEXTS)
    ix.add_texts([TEXTS[i][0] for i in ids], ids=ids, metadatas=[TEXTS[i][1] for i in ids])


def test_added_texts_are_searchable_with_metadata_and_exact_spans(index_at) -> None:  # type: ignore[no-untyped-def]
    with index_at() as ix:
        add_all(ix)
        for mode in MODES:
            hit = ix.search("rotate the signing keys", k=1, mode=mode)[0]
            assert hit.path == "k1", mode
            assert hit.metadata == {"team": "security", "year": 2024}
            assert TEXTS["k1"][0][hit.start : hit.end] == hit.text
            assert hit.to_dict()["metadata"] == {"team": "security", "year": 2024}


def test_same_text_again_is_a_no_op_and_metadata_change_is_not_reembedded(index_at, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with index_at() as ix:
        add_all(ix)
        before = fake_encoder.embedded
        again = ix.add_texts([TEXTS["k1"][0]], ids=["k1"], metadatas=[TEXTS["k1"][1]])
        assert (again.unchanged, again.added, again.updated) == (1, 0, 0)
        changed = ix.add_texts([TEXTS["k1"][0]], ids=["k1"], metadatas=[{"team": "platform"}], titles=["Keys"])
        assert (changed.updated, changed.passages_embedded) == (1, 0)
        assert fake_encoder.embedded == before
        hit = ix.search("rotate the signing keys", k=1)[0]
        assert (hit.path, hit.title, hit.metadata) == ("k1", "Keys", {"team": "platform"})
        new_text = ix.add_texts(["Keys now rotate themselves every month."], ids=["k1"])
        assert (new_text.updated, new_text.passages_embedded) == (1, 1)
        assert ix.search("rotate themselves every month", k=1)[0].text.startswith("Keys now rotate")
        assert ix.stats().documents == len(TEXTS)


def test_default_ids_are_content_hashes(index_at) -> None:  # type: ignore[no-untyped-def]
    with index_at() as ix:
        ix.add_texts(["alpha beta gamma", "delta epsilon"])
        assert {h.path for h in ix.search("alpha delta", k=5, mode="lexical")} == {
            text_id("alpha beta gamma"), text_id("delta epsilon")
        }
        assert ix.add_texts(["alpha beta gamma"]).unchanged == 1


def test_remove_takes_texts_out_of_every_side(backend: str, index_location: str, index_at, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with index_at() as ix:
        add_all(ix)
        assert ix.remove(["k1", "nope"]) == 1
        for mode in MODES:
            assert "k1" not in {h.path for h in ix.search("rotate the signing keys", k=10, mode=mode)}, mode
        assert ix.stats().passages == len(TEXTS) - 1
        if backend == "folder":  # the vector file beside the database
            assert ix.stores.vectors.count == ix.stats().passages
    with Index(index_location, encoder=fake_encoder) as ix:  # the removal was saved
        assert ix.stats().passages == len(TEXTS) - 1
        if backend == "folder":
            assert ix.stores.vectors.count == len(TEXTS) - 1


@pytest.mark.parametrize(("filters", "expected"), FILTER_CASES)
def test_filters_restrict_every_mode(index_at, filters, expected) -> None:  # type: ignore[no-untyped-def]
    with index_at() as ix:
        add_all(ix)
        for mode in MODES:
            # A query that favours the documents the filter excludes: the filter must act before ranking.
            hits = ix.search("networks route packets database", k=10, mode=mode, filters=filters)
            got = {h.path for h in hits}
            assert got <= expected, mode
            if mode != "lexical":  # dense and hybrid rank every allowed passage
                assert got == expected, mode


def test_filtered_query_finds_matches_far_below_the_unfiltered_top(backend: str, index_at) -> None:  # type: ignore[no-untyped-def]
    with index_at(k0=5, ivf_threshold=150) as ix:
        texts = [f"rotate the signing keys number {i}" for i in range(200)] + ["an unrelated note on keys"]
        ids = [f"t{i}" for i in range(201)]
        metas = [{"kind": "bulk"}] * 200 + [{"kind": "rare"}]
        ix.add_texts(texts, ids=ids, metadatas=metas)
        if backend == "folder":
            assert ix.stores.vectors.kind == "ivf"  # the selector path of the approximate index, too
        else:
            assert ix.stats().vector_index == "hnsw"  # the approximate index's filtered path, too
        for mode in MODES:
            hits = ix.search("rotate the signing keys", k=3, mode=mode, filters={"metadata": {"kind": "rare"}})
            assert [h.path for h in hits] == ["t200"], mode


def test_reingesting_a_folder_keeps_added_texts(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Apples are red.\n")
    with index_at() as ix:
        ix.ingest(docs)
        add_all(ix)
        (docs / "a.txt").unlink()
        summary = ix.ingest(docs)
        assert summary.removed == 1
        assert ix.stats().documents == len(TEXTS)
        # files and texts filter alike by path
        (docs / "b.md").write_text("Bananas are yellow.\n")
        ix.ingest(docs)
        hits = ix.search("bananas", k=5, filters=Filter(path_prefix=str(docs)))
        assert [Path(h.path).name for h in hits] == ["b.md"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"texts": [""], "ids": ["a"]}, "empty text"),
        ({"texts": ["x", "y"], "ids": ["a", "a"]}, "given twice"),
        ({"texts": ["x"], "ids": [""]}, "non-empty string"),
        ({"texts": ["x"], "ids": ["a"], "metadatas": [{"v": object()}]}, "not JSON"),
        ({"texts": ["x"], "ids": ["a", "b"]}, "same length"),
    ],
)
def test_bad_texts_are_refused_before_anything_is_stored(tmp_path: Path, fake_encoder, kwargs, message) -> None:  # type: ignore[no-untyped-def]
    with open_index(tmp_path, fake_encoder) as ix:
        with pytest.raises(ConfigError, match=message):
            ix.add_texts(**kwargs)
        assert ix.stats().documents == 0


@pytest.mark.parametrize(
    "forged", ["/etc/passwd", "/", "C:\\Users\\me\\keys.md", "c:/keys.md", "\\\\server\\share\\keys.md", "\\keys.md"]
)
def test_an_id_may_not_look_like_a_file_path(tmp_path: Path, fake_encoder, forged: str) -> None:  # type: ignore[no-untyped-def]
    with open_index(tmp_path, fake_encoder) as ix:
        with pytest.raises(ConfigError, match="absolute file path"):
            ix.add_texts(["forged"], ids=[forged])
        assert ix.stats().documents == 0


# Ids that hide what they are or pass for a file: invisible or space characters in front of a path (the page and
# the table showed them exactly as the ingested file), at the ends, inside; URLs, home paths, full-width look-alikes.
FORGED_IDS = [
    "\u200b/abs/path/README.txt", "\u2060/abs/path/README.txt", "\ufeff/abs/path/README.txt",
    "\u00a0/abs/path/README.txt", " /abs/path/README.txt", "\t/abs/path/README.txt", "\u202a/abs/path/README.txt",
    "README.txt ", "READ\u200bME", "notes\u00a0a", "a\nb", "a\x00b", "invoice\u202efdp.exe", "\u3000x",
    "file:///etc/passwd", "FILE:etc/passwd", "https://example.org/a", "~/secret.txt", "~root/secret.txt",
    "\uff0fetc\uff0fpasswd", "\uff5e/secret.txt",
]
FAIR_IDS = ["notes/keys-01", "my notes", "urn:isbn:0451450523", "k1", "docs/keys.md", "ünïcode-ok", "a~b"]


def test_an_id_may_not_hide_what_it_is_or_pass_for_a_file_on_any_way_in(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("fastapi", reason="the server extra is not installed")
    httpx = pytest.importorskip("httpx", reason="httpx (test extra) is not installed")
    from searchapp.client import Client
    from searchapp.server.app import create_app
    from tests.server_helpers import running

    with open_index(tmp_path, fake_encoder) as ix, running(create_app(ix)) as url, Client(url) as client:
        for forged in FORGED_IDS:
            with pytest.raises(ConfigError, match="id ") as raised:
                ix.add_texts(["forged"], ids=[forged])
            assert "\n" not in str(raised.value) and forged not in str(raised.value).replace(ascii(forged), "")
            with pytest.raises(ConfigError, match="id "):
                ix.ingest_records([(forged, "README", "forged")])
            with pytest.raises(ConfigError, match="id "):
                client.add_texts(["forged"], ids=[forged])
            r = httpx.post(url + "/documents", json={"documents": [{"id": forged, "title": "README", "text": "F"}]})
            assert r.status_code == 400 and r.json()["error"]["message"].startswith("text 0: id "), (forged, r.text)
        assert ix.stats().documents == 0
        ix.add_texts(["fair"] * len(FAIR_IDS), ids=FAIR_IDS)
        assert sorted(d.path for d in ix.documents()) == sorted(FAIR_IDS)


def test_the_query_table_says_which_hit_is_a_file_and_which_a_text(tmp_path: Path, fake_encoder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # A text whose id is a file's path relative to the working folder read as that file in the table.
    from typer.testing import CliRunner

    from searchapp.cli import app

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "keys.md").write_text("Rotate the signing keys every quarter.\n")
    with open_index(tmp_path, fake_encoder) as ix:
        ix.ingest(tmp_path / "docs")
        ix.add_texts(["Forged: the signing keys never expire."], ids=["docs/keys.md"], titles=["keys"])
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(app, ["query", "signing keys", "--mode", "lexical", "--index", "ix"])
    assert out.exit_code == 0, out.output
    heads = sorted(re.sub(r"  passage \d+$", "", line.split(None, 2)[2]) for line in out.stdout.splitlines()
                   if line[:3].strip().isdigit())
    assert heads == ["file  docs/keys.md:1", "text  docs/keys.md:1"]
    # `show` takes a path given on the command line that exists as the file, as --path-prefix does; a text's id
    # as it is otherwise.
    shown = CliRunner().invoke(app, ["show", "docs/keys.md", "--index", "ix"])
    assert shown.stdout == "Rotate the signing keys every quarter.\n"
    (tmp_path / "docs" / "keys.md").unlink()
    shown = CliRunner().invoke(app, ["show", "docs/keys.md", "--index", "ix"])
    assert shown.stdout == "Forged: the signing keys never expire.\n"


def test_an_id_may_not_name_an_ingested_file(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Apples are red.\n")
    with index_at() as ix:
        ix.ingest(docs)
        with pytest.raises(ConfigError, match="absolute file path"):
            ix.add_texts(["other"], ids=[str((docs / "a.txt").absolute())])
        assert ix.remove([str((docs / "a.txt").absolute())]) == 1  # the Python API removes files too


def test_hits_say_whether_they_come_from_a_file_or_a_text(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    # Hits of an ingested file say ``file``, hits of an added text ``text``, in every mode and in JSON.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keys.md").write_text("Rotate the signing keys every quarter.\n")
    with index_at() as ix:
        ix.ingest(docs)
        ix.add_texts(["Signing keys expire after a year."], ids=["docs/keys.md"])
        for mode in MODES:
            hits = ix.search("signing keys", k=5, mode=mode)
            assert {h.path: h.source for h in hits} == {str(docs / "keys.md"): "file", "docs/keys.md": "text"}, mode
            assert {h.to_dict()["source"] for h in hits} == {"file", "text"}


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"metadata": {"a b": 1}}, "filter key"),
        ({"metadata": {"a": {"nested": 1}}}, "string, number or boolean"),
        ({"metadata": {"a": []}}, "non-empty list"),
        ({"colour": "red"}, "unknown filter colour"),
        ({"path_glob": 3}, "must be a string"),
        ("team=security", "must be an object"),
    ],
)
def test_bad_filters_are_clear_errors(tmp_path: Path, fake_encoder, filters, message) -> None:  # type: ignore[no-untyped-def]
    with open_index(tmp_path, fake_encoder) as ix:
        add_all(ix)
        with pytest.raises(ConfigError, match=message):
            ix.search("keys", filters=filters)


@pytest.mark.parametrize("mode", MODES)
def test_exact_ties_are_ordered_by_passage_id_in_every_mode(index_at, mode: str) -> None:  # type: ignore[no-untyped-def]
    # Duplicate passages (common in pooled collections) score exactly alike; the order among them must not be
    # the engine's accident, or single and fused runs of the same scores disagree (and backends differ).
    with index_at() as ix:
        ix.add_texts(["signing keys rotate yearly"] * 6 + ["unrelated words here"], ids=[f"t{i}" for i in range(7)])
        hits = ix.search("signing keys rotate yearly", k=6, mode=mode)
        assert len({round(h.score, 6) for h in hits}) == 1, "the six copies must tie"
        assert [h.passage_id for h in hits] == sorted(h.passage_id for h in hits)


def test_the_index_records_the_precision_its_vectors_were_embedded_in(  # type: ignore[no-untyped-def]
    index_location: str, index_at, fake_encoder
) -> None:
    fake_encoder.precision = "fp32"
    with index_at() as ix:
        assert ix.stats().to_dict()["vectors_precision"] is None  # nothing embedded yet
        ix.add_texts(["first text"], ids=["a"])
        assert ix.stats().vectors_precision == ("fp32",)
    fake_encoder.precision = "bf16"
    with Index(index_location, encoder=fake_encoder) as ix:
        ix.add_texts(["first text"], ids=["a"])  # unchanged: nothing embedded, nothing recorded
        assert ix.stats().vectors_precision == ("fp32",)
        ix.add_texts(["second text"], ids=["b"])
        assert ix.stats().to_dict()["vectors_precision"] == "bf16+fp32"
        # An encoder that names a precision but no device embeds on the CPU; one that names its device is taken
        # at its word.
        assert ix.stats().to_dict()["vectors_device"] == "cpu"
        assert ix.stats().to_dict()["vectors_encoder"] is None  # a stand-in none of the backends made
        fake_encoder.device = "cpu"
        ix.add_texts(["third text"], ids=["c"])
        assert ix.stats().vectors_device == ("cpu",)
