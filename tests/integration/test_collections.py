"""Named collections on the command line: ``ingest --collection NAME --description TEXT`` records which collection
each document is in, ``query --collection`` searches one, ``collections`` lists them with their counts; an index
without names behaves as before, and removal of vanished files stays scoped to the folder ingested."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchapp.cli import app
from searchapp.errors import ConfigError

runner = CliRunner()


def cli(*args: str, code: int = 0) -> str:
    out = runner.invoke(app, list(args))
    assert out.exit_code == code, out.output
    return out.stdout if code == 0 else out.output


@pytest.fixture()
def folders(tmp_path: Path, fake_model) -> tuple[Path, Path, str]:  # type: ignore[no-untyped-def]
    guides, api = tmp_path / "guides", tmp_path / "api"
    guides.mkdir()
    api.mkdir()
    (guides / "rotate.md").write_text("# Rotating keys\n\nRotate the signing keys every quarter.\n")
    (guides / "backup.md").write_text("# Backups\n\nBackups of the signing keys run nightly.\n")
    (api / "keys.md").write_text("# Keys endpoint\n\nGET /keys lists the signing keys.\n")
    return guides, api, str(tmp_path / "ix")


def listed(ix: str) -> list[dict]:  # type: ignore[type-arg]
    return json.loads(cli("collections", "-i", ix, "--json"))["collections"]  # type: ignore[no-any-return]


def paths(ix: str, *options: str) -> set[str]:
    out = json.loads(cli("query", "signing keys", "--mode", "lexical", "-i", ix, "--json", *options))
    return {Path(h["path"]).name for h in out["hits"]}


def test_collections_are_named_listed_and_searched_apart(folders: tuple[Path, Path, str]) -> None:
    guides, api, ix = folders
    cli("ingest", str(guides), "-i", ix, "--collection", "guides", "--description", "How-to guides for operators")
    cli("ingest", str(api), "-i", ix, "--collection", "api")
    assert listed(ix) == [
        {"name": "api", "description": "", "documents": 1, "passages": 1},
        {"name": "guides", "description": "How-to guides for operators", "documents": 2, "passages": 2},
    ]
    assert paths(ix) == {"rotate.md", "backup.md", "keys.md"}
    assert paths(ix, "--collection", "guides") == {"rotate.md", "backup.md"}
    assert paths(ix, "--collection", "api") == {"keys.md"}
    # A collection the index does not hold is an error listing those it holds (it was no hits, exit 0).
    assert "its collections: api, guides" in cli("query", "signing keys", "-i", ix, "--collection", "nothing",
                                                 code=2)
    table = cli("collections", "-i", ix)
    assert "How-to guides for operators" in table and "guides" in table
    # A re-ingest into the same collection is a normal re-ingest: nothing read again, the description kept.
    again = json.loads(cli("ingest", str(guides), "-i", ix, "--collection", "guides", "--json"))
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, 2)
    assert listed(ix)[1]["description"] == "How-to guides for operators"
    # A vanished file is removed from its folder only; the other collection keeps its documents.
    (guides / "backup.md").unlink()
    assert json.loads(cli("ingest", str(guides), "-i", ix, "--collection", "guides", "--json"))["removed"] == 1
    assert [(c["name"], c["documents"]) for c in listed(ix)] == [("api", 1), ("guides", 1)]
    # A folder ingested into another collection moves there without being embedded again.
    moved = json.loads(cli("ingest", str(api), "-i", ix, "--collection", "guides", "--json"))
    assert moved["passages_embedded"] == 0
    assert [(c["name"], c["documents"]) for c in listed(ix)] == [("guides", 2)]
    assert paths(ix, "--collection", "guides") == {"rotate.md", "keys.md"}


def test_an_index_without_names_has_no_collections(folders: tuple[Path, Path, str]) -> None:
    guides, _, ix = folders
    cli("ingest", str(guides), "-i", ix)
    assert listed(ix) == [] and "no collections" in cli("collections", "-i", ix)
    out = json.loads(cli("query", "signing keys", "--mode", "lexical", "-i", ix, "--json"))
    assert all(h["metadata"] == {} for h in out["hits"]) and len(out["hits"]) == 2


def test_bad_collection_options_are_one_line_errors(folders: tuple[Path, Path, str]) -> None:
    guides, _, ix = folders
    out = cli("ingest", str(guides), "-i", ix, "--collection", "my guides", code=2)
    assert out.strip() == ("error: collection name 'my guides': use letters, digits, '_', '-' and '.' (a letter or "
                           "digit first)")
    out = cli("ingest", str(guides), "-i", ix, "--description", "orphan", code=2)
    assert out.strip() == "error: a description describes a collection: give the collection's name with it"
    assert not Path(ix).exists()  # refused before any index was made


def test_collections_on_every_backend(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    ix = index_at()
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.txt").write_text("Signing keys rotate every quarter.", encoding="utf-8")
    ix.ingest(tmp_path / "a", collection="ops", description="Operations")
    # A text joins a collection by its metadata; a text naming none, and one naming another value type, do not.
    ix.add_texts(["Signing keys are listed by the API.", "Signing keys expire.", "Signing keys are logged."],
                 ids=["t1", "t2", "t3"], metadatas=[{"collection": "api"}, {}, {"collection": 3}])
    assert [c.to_dict() for c in ix.collections()] == [
        {"name": "api", "description": "", "documents": 1, "passages": 1},
        {"name": "ops", "description": "Operations", "documents": 1, "passages": 1}]
    for mode in ("lexical", "dense", "hybrid"):
        assert [Path(h.path).name for h in ix.search("signing keys", mode=mode, filters={"collection": "ops"})] == [
            "one.txt"]
        assert [h.path for h in ix.search("signing keys", mode=mode, filters={"collection": "api"})] == ["t1"]
        # A collection the index does not hold ("3" is a number's, which names none) is an error listing them.
        with pytest.raises(ConfigError, match="collection '3' is not in this index; its collections: api, ops"):
            ix.search("signing keys", mode=mode, filters={"collection": "3"})


def test_collection_and_document_listings_read_no_passage(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    # The listings counted passages by reading every one (GET /collections: 2.6 s and 178 MB at 100,000 passages,
    # on every call); each document's count is now a column written with its passages.
    from sqlalchemy import event

    ix = index_at()
    (tmp_path / "a").mkdir()
    for i in range(3):
        (tmp_path / "a" / f"{i}.txt").write_text("Signing keys rotate.\n\n" * (i + 1) * 40, encoding="utf-8")
    ix.ingest(tmp_path / "a", collection="ops")
    statements: list[str] = []
    event.listen(ix.stores.engine, "before_cursor_execute",
                 lambda conn, cursor, sql, *args: statements.append(sql.lower()))

    def tables_read() -> set[str]:
        read = {m.group(1) for s in statements for m in re.finditer(r"\b(?:from|join)\s+(\w+)", s)}
        statements.clear()
        return read

    collections = ix.collections()
    assert tables_read() <= {"collection_counts", "settings"}  # a row per collection, not per document
    documents = ix.documents()
    assert tables_read() == {"documents"}  # a row per document, not per passage
    assert [c.passages for c in collections] == [sum(d.passages for d in documents)]
    assert len({d.passages for d in documents}) == 3 and min(d.passages for d in documents) >= 1


@pytest.mark.parametrize("name", ["", " docs", "a\u202eb", "x" * 100, "a/b"])
def test_a_collection_named_in_metadata_follows_the_one_naming_rule(tmp_path: Path, fake_encoder, name: object) -> None:  # type: ignore[no-untyped-def]
    # Names set through a text's metadata skipped the rule --collection follows: empty, bidi overrides, 100
    # characters (listed, then never selectable: the selector takes 64) were accepted.
    from searchapp import Index, IndexConfig
    from searchapp.errors import ConfigError

    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        with pytest.raises(ConfigError, match="metadata 'collection'"):
            ix.add_texts(["A note."], ids=["n"], metadatas=[{"collection": name}])
        with pytest.raises(ConfigError, match="metadata 'collection'"):
            ix.ingest_records([("n", "N", "A note.", {"collection": name})])
        ix.add_texts(["A note."], ids=["n"], metadatas=[{"collection": "notes-1"}])
        assert [c.name for c in ix.collections()] == ["notes-1"]


def test_a_collection_or_path_prefix_the_index_does_not_hold_is_an_error_listing_what_it_holds(
        folders: tuple[Path, Path, str]) -> None:
    # A misspelled collection answered "no results", exit 0, on every surface.
    guides, api, ix = folders
    cli("ingest", str(guides), "-i", ix, "--collection", "guides")
    cli("ingest", str(api), "-i", ix, "--collection", "api")
    out = runner.invoke(app, ["query", "signing keys", "-i", ix, "--collection", "gudes", "--mode", "lexical"])
    assert out.exit_code == 2, out.output
    assert out.stderr == "error: collection 'gudes' is not in this index; its collections: api, guides\n"
    missing = str(guides.parent / "gides")
    out = runner.invoke(app, ["query", "signing keys", "-i", ix, "--path-prefix", missing, "--mode", "lexical"])
    assert out.exit_code == 2, out.output
    assert out.stderr == (f"error: no document's path or id starts with {missing!r}: its files are under "
                          f"{guides.parent.resolve()}/\n")
    # Held, with nothing that matches the query: no hits, exit status 1 (nothing matched, as grep), not an error.
    out = runner.invoke(app, ["query", "zebra", "-i", ix, "--collection", "api", "--mode", "lexical", "--json"])
    assert out.exit_code == 1 and json.loads(out.stdout)["hits"] == [], out.output


def test_documents_lists_each_document_s_collection_and_takes_one(folders: tuple[Path, Path, str]) -> None:
    guides, api, ix = folders
    cli("ingest", str(guides), "-i", ix, "--collection", "guides")
    cli("ingest", str(api), "-i", ix)
    listed_docs = json.loads(cli("documents", "-i", ix, "--json"))["documents"]
    assert {Path(d["path"]).name: d["collection"] for d in listed_docs} == {
        "rotate.md": "guides", "backup.md": "guides", "keys.md": None}
    only = json.loads(cli("documents", "-i", ix, "--collection", "guides", "--json"))["documents"]
    assert sorted(Path(d["path"]).name for d in only) == ["backup.md", "rotate.md"]
    table = cli("documents", "-i", ix).splitlines()
    assert "collection" in table[0] and any("guides" in row and "rotate.md" in row for row in table[1:])
    assert any(" -  " in row and "keys.md" in row for row in table[1:])
    assert "its collections: guides" in cli("documents", "-i", ix, "--collection", "guide", code=2)


def test_status_lists_the_collections(folders: tuple[Path, Path, str]) -> None:
    guides, api, ix = folders
    cli("ingest", str(guides), "-i", ix, "--collection", "guides")
    cli("ingest", str(api), "-i", ix, "--collection", "api")
    assert json.loads(cli("status", "-i", ix, "--json"))["collections"] == ["api", "guides"]
    assert "    collections: api, guides" in cli("status", "-i", ix).splitlines()
