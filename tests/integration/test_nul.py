"""A NUL character behaves alike on both backends: refused in an added text's id, title, text or metadata, with
the whole batch refused and the bad item named by its position (nothing half-added); a filter, a lookup or a
removal target with one matches nothing (issue: hardening, round 3; docs/reliability.md). PostgreSQL's text
cannot hold NUL: there, each of these was a psycopg DataError, HTTP 500."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from searchapp import Index
from searchapp.errors import ConfigError, DataRejectedError, DocumentNotFoundError
from searchapp.server.app import create_app

BAD = [
    ({"texts": ["a\x00b"]}, "its text holds a NUL"),
    # An id meets the id rule first (searchapp/ids.py: no character that does not show), naming the item alike.
    ({"ids": ["x\x00y"]}, "id 'x\\\\x00y' holds U\\+0000"),
    ({"titles": ["t\x00"]}, "its title holds a NUL"),
    ({"metadatas": [{"k": "v\x00"}]}, "its metadata holds a NUL"),
    ({"metadatas": [{"k": ["ok", "v\x00"]}]}, "its metadata holds a NUL"),
]


@pytest.mark.parametrize("bad, message", BAD)
def test_a_nul_in_an_added_text_refuses_the_batch_naming_the_item(index_at: Callable[..., Index],
                                                                  bad: dict[str, list[Any]], message: str) -> None:
    ix = index_at()
    texts = ["rotate the signing keys", "water the tomatoes", "a third text"]
    batch: dict[str, list[Any]] = {"texts": list(texts), "ids": ["a", "b", "c"], "titles": ["A", "B", "C"],
                                   "metadatas": [{}, {}, {}]}
    for field, (value,) in bad.items():
        batch[field][1] = value
    with pytest.raises(ConfigError, match=f"^text 1[ :].*{message}"):
        ix.add_texts(**batch)
    assert ix.stats().documents == 0  # nothing of it was added


def test_nul_in_filters_lookups_and_removals_matches_nothing(index_at: Callable[..., Index]) -> None:
    ix = index_at()
    ix.add_texts(["rotate the signing keys", "water the tomatoes"], ids=["a", "b"], metadatas=[{"k": "v"}, {}])
    for filters in ({"metadata": {"k": "v\x00"}}, {"metadata": {"k": ["v\x00", "w"]}}, {"path_prefix": "a\x00"},
                    {"path_glob": "*\x00*"}, {"path_prefix": "a", "path_glob": "\x00"}):
        for mode in ("lexical", "dense", "hybrid"):
            assert ix.search("signing keys", mode=mode, filters=filters) == [], (filters, mode)
    assert ix.search("signing keys", mode="lexical", filters={"metadata": {"k": ["v\x00", "v"]}})[0].path == "a"
    assert [h.path for h in ix.search("signing\x00 keys", mode="lexical")] == ["a"]
    # A lone surrogate (JSON's "\ud800": an MCP get_document path) cannot be stored either: it names nothing.
    for key in ("a\x00", "\ud800", "a\udcff"):
        with pytest.raises(DocumentNotFoundError):
            ix.document(key)
        assert ix.remove([key]) == 0 and ix.remove_targets([key]) == []
    assert ix.remove(["a\x00"]) == 0 and len(ix.remove_targets(["a\x00", "b\x00"])) == 0
    assert ix.stats().documents == 2


def test_the_http_api_answers_nul_with_4xx(index_at: Callable[..., Index]) -> None:
    ix = index_at()
    client = TestClient(create_app(ix), base_url="http://localhost", raise_server_exceptions=False)
    docs = [{"id": f"t{i}", "text": f"text number {i}"} for i in range(1000)]
    docs[617]["text"] = "bad \x00 text"
    res = client.post("/documents", json={"documents": docs})
    assert res.status_code == 400 and res.json()["error"]["message"].startswith("text 617 (id 't617')")
    assert client.get("/status").json()["documents"] == 0
    assert client.post("/documents", json={"documents": docs[:617]}).status_code == 200
    assert client.get("/documents/t1%00").status_code == 404
    assert client.delete("/documents/t1%00").status_code == 404
    res = client.post("/search", json={"query": "text", "mode": "lexical", "filters": {"path_prefix": "t\x00"}})
    assert res.status_code == 200 and res.json()["hits"] == []


# A file's NUL past the binary sniff (the first 8 KB), or one a loader gives, failed the whole group's write on
# PostgreSQL: a traceback, and the good files of the group not indexed (issue: hardening, round 4).
def test_a_nul_in_a_file_is_read_as_a_space_and_its_group_is_indexed(index_at: Callable[..., Index],
                                                                      tmp_path: Path) -> None:
    ix = index_at()
    folder = tmp_path / "nul"
    folder.mkdir()
    (folder / "ok.txt").write_text("water the tomatoes twice a week")
    late = "filler words " * 700 + "rotate the\x00signing keys\x00"
    assert len(late.split("\x00")[0].encode()) > 8192
    (folder / "late.txt").write_text(late)
    summary = ix.ingest(folder)
    assert (summary.added, summary.failed) == (2, 0), summary.failures
    text = ix.document(str((folder / "late.txt").resolve())).text
    # Rebuilt from its passages (white space between them as spaces and a line break): same length, same words.
    assert len(text) == len(late) and "\x00" not in text and text.split() == late.replace("\x00", " ").split()
    assert text.index("rotate the signing keys") == late.index("rotate the\x00signing keys")
    assert ix.search("signing keys", mode="lexical")[0].path.endswith("late.txt")


def test_a_nul_a_loader_gives_in_text_title_or_heading_is_a_space(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from searchapp.ingest.formats import load
    from searchapp.ingest.formats.format import Format, LoadedText
    from searchapp.types import Heading

    def loader(path: Path, data: bytes) -> LoadedText:  # as a PDF's text layer may give
        return LoadedText("Intro\x00\nrotate\x00keys", "The\x00title", (Heading(0, 1, "Intro\x00"),))

    monkeypatch.setattr(load, "format_for", lambda path: Format("pdf", (".pdf",), loader, is_text=False))
    (tmp_path / "a.pdf").write_bytes(b"%PDF-1.4")
    doc = load.load_document(tmp_path / "a.pdf")
    assert (doc.text, doc.title, doc.headings) == ("Intro \nrotate keys", "The title", (Heading(0, 1, "Intro "),))


def test_a_document_the_database_refuses_costs_only_itself(index_at: Callable[..., Index], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    ix = index_at()
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("a", "bad", "c"):
        (folder / f"{name}.txt").write_text(f"the text of {name} about signing keys")
    stores = type(ix.stores)
    write = stores.write

    def refusing(self: Any, remove: Any, add: Any) -> None:
        if any(item.document.path.endswith("bad.txt") for item in add):
            raise DataRejectedError("the database refused its data: invalid byte sequence")
        write(self, remove, add)

    monkeypatch.setattr(stores, "write", refusing)
    summary = ix.ingest(folder)
    assert (summary.added, summary.failed) == (2, 1)
    assert [(Path(p).name, r) for p, r in summary.failures] == [
        ("bad.txt", "the database refused its data: invalid byte sequence")]
    assert sorted(Path(d.path).name for d in ix.documents()) == ["a.txt", "c.txt"]
    # A new version refused keeps the one indexed.
    monkeypatch.setattr(stores, "write", write)
    ix.ingest(folder)
    (folder / "bad.txt").write_text("a newer text of bad")
    monkeypatch.setattr(stores, "write", refusing)
    summary = ix.ingest(folder)
    assert summary.failures == [(str((folder / "bad.txt").resolve()),
                                 "the database refused its data: invalid byte sequence (its indexed version is kept)")]
    assert ix.document(str((folder / "bad.txt").resolve())).text == "the text of bad about signing keys"


def test_postgresql_refusing_a_file_s_text_costs_only_that_file(pg_url: str, fake_encoder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from searchapp.ingest.formats import load

    monkeypatch.setattr(load, "without_nul", lambda text: text)  # the server's own refusal, then
    folder = tmp_path / "nul"
    folder.mkdir()
    (folder / "ok.txt").write_text("water the tomatoes twice a week")
    (folder / "late.txt").write_text("filler words " * 700 + "rotate the\x00signing keys")
    with Index(pg_url, create=True, encoder=fake_encoder) as ix:
        summary = ix.ingest(folder)
        assert (summary.added, summary.failed) == (1, 1)
        (path, reason), = summary.failures
        assert path.endswith("late.txt") and reason.startswith("the database refused its data: ")
        assert len(reason.splitlines()) == 1
        assert [Path(d.path).name for d in ix.documents()] == ["ok.txt"]
