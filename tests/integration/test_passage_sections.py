"""Passages know where they stand: section paths stored, returned, embedded with the passage and matched by BM25."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from searchapp import Index, IndexConfig
from searchapp.cli import app

GUIDE = """# Plugins

Some words about plugins in general.

## The checker plugin

Enable it in the configuration file and restart the editor.

### Settings

Every setting has a sensible default value.
"""
OTHER = """# Changes

Every setting has a sensible default value.
"""


def _docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text(GUIDE)
    (docs / "changes.md").write_text(OTHER)
    # Unrelated pages, so that the words above are rare enough for BM25's idf to count them.
    for i, topic in enumerate(["tomatoes", "rivers", "violins", "glaciers", "comets", "markets", "lanterns"]):
        (docs / f"z{i}.md").write_text(f"# {topic.title()}\n\nNotes on {topic} and how {topic} change over time.\n")
    return docs


def test_hits_carry_their_section_and_the_encoder_sees_it(tmp_path: Path, fake_encoder, index_at) -> None:  # type: ignore[no-untyped-def]
    ix = index_at(max_tokens=16)
    ix.ingest(_docs(tmp_path))
    embedded = [t for call in fake_encoder.calls for t in call]
    settings = next(t for t in embedded if "Settings\n\nEvery" in t)
    assert settings.startswith("Plugins > The checker plugin > Settings\n")
    hits = ix.search("sensible default value", k=1, mode="lexical", filters={"path_glob": "*guide.md"})
    assert hits[0].section == "Plugins > The checker plugin > Settings"
    # The stored text is the passage alone, the file's own characters.
    assert hits[0].text.endswith("Every setting has a sensible default value.") and ">" not in hits[0].text
    assert GUIDE[hits[0].start : hits[0].end] == hits[0].text
    exported = [r for r in ix.export() if getattr(r, "text", None) == hits[0].text]
    assert exported[0].section == hits[0].section


def test_a_passage_under_a_heading_that_names_the_query_ranks_first(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    # Both backends: FTS5 matches the section path as a column of its own, PostgreSQL's BM25 in the passage's
    # lexical field (analysis.lexical_fields).
    ix = index_at(max_tokens=16)
    ix.ingest(_docs(tmp_path))
    # Both documents say the same sentence (changes.md is stored first: the lower id wins a tie); only the
    # guide's headings name a plugin.
    hits = ix.search("plugin sensible default", k=3, mode="lexical")
    assert hits[0].section == "Plugins > The checker plugin > Settings", [(h.section, h.text) for h in hits]


def test_a_word_only_in_the_section_path_finds_the_passage(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    ix = index_at(max_tokens=16)
    ix.ingest(_docs(tmp_path))
    settings = "Plugins > The checker plugin > Settings"
    # "checker" is in the heading line of the passage under it and in the section path of the one below, never
    # in that one's text: BM25 finds it there by its section alone.
    hits = {h.section: h for h in ix.search("checker", k=10, mode="lexical")}
    assert settings in hits, list(hits)
    assert "checker" not in hits[settings].text.lower()
    assert hits[settings].text.endswith("Every setting has a sensible default value.")
    # What is shown and highlighted is the passage's own text.
    assert GUIDE[hits[settings].start : hits[settings].end] == hits[settings].text


def test_the_cli_shows_the_section_above_the_snippet_and_in_json(tmp_path: Path, fake_model) -> None:  # type: ignore[no-untyped-def]
    docs = _docs(tmp_path)
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(docs), "--max-tokens", "16"]).exit_code == 0
    only = ["--path-glob", "*guide.md"]
    shown = runner.invoke(app, ["query", "sensible default value", "--mode", "lexical", "-k", "1", *only])
    lines = shown.stdout.splitlines()
    assert lines[2].strip() == "Plugins > The checker plugin > Settings"  # below the header and the hit's line
    out = runner.invoke(app, ["query", "sensible default value", "--mode", "lexical", "-k", "1", "--json", *only])
    assert json.loads(out.stdout)["hits"][0]["section"] == "Plugins > The checker plugin > Settings"


def test_passages_of_an_index_without_the_setting_are_embedded_alone(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with Index(tmp_path / "ix", create=True, config=IndexConfig.from_flat(passage_context="none", max_tokens=16),
               encoder=fake_encoder) as ix:
        ix.ingest(_docs(tmp_path))
    embedded = [t for call in fake_encoder.calls for t in call]
    assert not any(t.startswith(("Plugins >", "Plugins\nPlugins", "Changes\nChanges")) for t in embedded)
    assert any(t.endswith("Every setting has a sensible default value.") for t in embedded)


def test_a_reingest_rereads_what_an_older_reader_made(tmp_path: Path, fake_encoder, index_at, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from searchapp.ingest import pipeline, reading

    docs = _docs(tmp_path)
    (docs / "plain.txt").write_text("A text file with no headings at all, the same to every reader.\n")
    ix = index_at(max_tokens=16)
    # An index made by an older reader, recorded under an older version: no section paths, but for one file
    # whose passages it made as this version does.
    current = pipeline.document_sections
    with monkeypatch.context() as m:
        m.setattr(reading, "READERS_VERSION", 0)
        m.setattr(pipeline, "document_sections", lambda doc, spans: (
            current(doc, spans) if doc.path.endswith("plain.txt") else [""] * len(spans)))
        ix.ingest(docs)
    before, calls = fake_encoder.embedded, len(fake_encoder.calls)
    assert ix.search("sensible default value", k=1, mode="lexical", filters={"path_glob": "*guide.md"})[0].section == ""

    # The files' bytes, sizes and mtimes are unchanged: only the recorded version says they must be read again.
    summary = ix.ingest(docs)
    hits = ix.search("sensible default value", k=1, mode="lexical", filters={"path_glob": "*guide.md"})
    assert hits[0].section == "Plugins > The checker plugin > Settings"
    assert summary.updated == 9 and summary.unchanged == 1  # the text file's passages came out the same: kept
    embedded = [t for call in fake_encoder.calls[calls:] for t in call]
    assert not any("the same to every reader" in t for t in embedded)
    assert fake_encoder.embedded > before
    # Recorded: the next ingest reads nothing.
    after = fake_encoder.embedded
    again = ix.ingest(docs)
    assert (again.updated, again.added, again.unchanged, fake_encoder.embedded) == (0, 0, 10, after)


def test_a_format_s_own_reader_version_makes_only_its_files_read_again(tmp_path: Path, fake_encoder, index_at,  # type: ignore[no-untyped-def]
                                                                       monkeypatch) -> None:
    from dataclasses import replace

    from searchapp.ingest.formats import registry

    docs = _docs(tmp_path)
    (docs / "plain.txt").write_text("A text file with no headings at all.\n")
    ix = index_at(max_tokens=16)
    ix.ingest(docs)
    versions = {Path(k).name: d.passages_version for k, d in ix.stores.documents().items()}
    assert set(versions.values()) == {5}  # every format at 0: what every reader recorded before formats had one
    read: list[str] = []
    load = registry.FORMATS[".md"].loader
    markdown = replace(registry.FORMATS[".md"], version=1,
                       loader=lambda path, data: (read.append(path.name), load(path, data))[1])
    monkeypatch.setitem(registry.FORMATS, ".md", markdown)
    monkeypatch.setitem(registry.FORMATS, ".markdown", markdown)
    again = ix.ingest(docs)
    # The Markdown files are read again (their passages the same: none embedded), the text file is not.
    assert sorted(read) == sorted(n for n in versions if n.endswith(".md")) and again.passages_embedded == 0
    after = {Path(k).name: d.passages_version for k, d in ix.stores.documents().items()}
    assert after == {n: 1005 if n.endswith(".md") else 5 for n in versions}
    assert ix.ingest(docs).unchanged == len(versions) and len(read) == len(after) - 1  # recorded: not read again
