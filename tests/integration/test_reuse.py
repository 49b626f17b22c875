"""An ingest embeds only what a change needs (ingest/reuse.py): a changed file's passages whose embedding input is
unchanged keep their stored vectors, a renamed, moved or copied file keeps its old version's, and the index is the
one a fresh ingest of the same files makes (same passages, same vectors). On both backends."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from searchapp import Index
from searchapp.types import ExportedDocument, ExportedPassage
from tests.fakes import FakeEncoder

WORDS = ("index", "passage", "vector", "model", "query", "ranking", "lexical", "dense", "folder", "watch")


def paragraphs(n: int, seed: int = 0) -> list[str]:
    """``n`` paragraphs of 20 to 120 words, each with a word of its own (the fake encoder's vectors of two
    passages then differ: a vector kept for the wrong passage shows)."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, int(rng.integers(20, 120)))) + f" p{seed}x{i}." for i in range(n)]


def page(parts: list[str], title: str = "Release notes", every: int = 7) -> str:
    """A Markdown page: a level-1 heading, then the paragraphs with a level-2 heading before every ``every``-th."""
    out = [f"# {title}"]
    for i, part in enumerate(parts):
        if i % every == 0:
            out.append(f"## Part {i // every}")
        out.append(part)
    return "\n\n".join(out) + "\n"


def contents(ix: Index) -> tuple[dict[str, tuple[str, str]], dict[tuple[str, int, int, str, str], np.ndarray]]:
    """The documents (path -> title, sha256) and the passages (path, start, end, text, section -> float32 ``(d,)``
    vector) an index holds."""
    docs: dict[str, tuple[str, str]] = {}
    passages: dict[tuple[str, int, int, str, str], np.ndarray] = {}
    for row in ix.export(vectors=True):
        if isinstance(row, ExportedDocument):
            docs[row.path] = (row.title, row.sha256)
        elif isinstance(row, ExportedPassage):
            passages[(row.path, row.start, row.end, row.text, row.section)] = np.asarray(row.vector, np.float32)
    return docs, passages


def assert_same_index(ix: Index, fresh: Index) -> None:
    docs, passages = contents(ix)
    fresh_docs, fresh_passages = contents(fresh)
    assert docs == fresh_docs
    assert passages.keys() == fresh_passages.keys()
    for key, vector in passages.items():
        np.testing.assert_allclose(vector, fresh_passages[key], atol=1e-6, err_msg=str(key[:3]))


def test_editing_one_paragraph_of_a_500_passage_file_embeds_at_most_3_passages(
        tmp_path: Path, index_at: Callable[..., Index], fake_encoder: FakeEncoder) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    parts = paragraphs(1100)
    (docs / "changelog.md").write_text(page(parts))
    (docs / "other.md").write_text(page(paragraphs(20, seed=1), "Other"))
    ix = index_at()
    first = ix.ingest(docs)
    assert first.passages_embedded >= 520

    parts[550] = parts[550].replace(" ", " corrected ", 1)
    (docs / "changelog.md").write_text(page(parts))
    before = fake_encoder.embedded
    summary = ix.ingest(docs)
    embedded = fake_encoder.embedded - before
    assert 1 <= embedded <= 3
    assert (summary.updated, summary.unchanged, summary.passages_embedded) == (1, 1, embedded)
    assert summary.passages_reused + embedded >= 500

    fresh = index_at("fresh")
    fresh.ingest(docs)
    assert_same_index(ix, fresh)


@pytest.mark.parametrize("how", ["renamed", "moved", "copied"])
def test_a_renamed_moved_or_copied_markdown_page_embeds_nothing(
        tmp_path: Path, index_at: Callable[..., Index], fake_encoder: FakeEncoder, how: str) -> None:
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "guide" / "setup.md").write_text(page(paragraphs(60), "Setting up"))
    ix = index_at()
    n = ix.ingest(docs).passages_embedded

    old, new = docs / "guide" / "setup.md", docs / ("guide/install.md" if how == "renamed" else "moved/setup.md")
    new.parent.mkdir(exist_ok=True)
    if how == "copied":
        shutil.copy(old, new)
    else:
        os.rename(old, new)
    before = fake_encoder.embedded
    summary = ix.ingest(docs)
    assert fake_encoder.embedded == before
    assert (summary.added, summary.removed) == (1, 0 if how == "copied" else 1)
    assert (summary.passages_embedded, summary.passages_reused) == (0, n)

    fresh = index_at("fresh")
    fresh.ingest(docs)
    assert_same_index(ix, fresh)


@pytest.mark.parametrize("context", ["section", "none"])
def test_a_renamed_file_titled_by_its_name_embeds_the_passages_whose_input_the_title_is_in(
        tmp_path: Path, index_at: Callable[..., Index], fake_encoder: FakeEncoder, context: str) -> None:
    # A text file has no heading: its title is its name, and under passage_context="section" that title is the
    # section path every passage is embedded under. Renamed, none of its inputs is the same; with the passage
    # alone embedded, all are.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.txt").write_text("\n\n".join(paragraphs(40)))
    ix = index_at(passage_context=context)
    n = ix.ingest(docs).passages_embedded
    os.rename(docs / "notes.txt", docs / "minutes.txt")
    before = fake_encoder.embedded
    summary = ix.ingest(docs)
    embedded = n if context == "section" else 0
    assert fake_encoder.embedded - before == embedded
    assert (summary.passages_embedded, summary.passages_reused) == (embedded, n - embedded)
    fresh = index_at("fresh", passage_context=context)
    fresh.ingest(docs)
    assert_same_index(ix, fresh)


class Threads(FakeEncoder):
    """The fake encoder, noting the thread of each call."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []

    def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray:
        self.threads.append(threading.current_thread().name)
        return super().encode(texts, truncate)


def test_many_edited_files_embed_their_edits_alone_while_the_rest_is_read(
        tmp_path: Path, index_at: Callable[..., Index]) -> None:
    # 40 files, one paragraph of each edited: the passages to embed (40) make a job for the worker that embeds
    # while the files are read (ingest/prefetch.py), which is handed those alone; progress counts them.
    docs = tmp_path / "docs"
    docs.mkdir()
    files = {f"page{i:02d}.md": paragraphs(12, seed=i) for i in range(40)}
    for name, parts in files.items():
        (docs / name).write_text(page(parts, name))
    encoder = Threads()
    ix = index_at(encoder=encoder)
    n = ix.ingest(docs).passages_embedded
    for name, parts in files.items():
        parts[5] = parts[5].replace(" ", " edited ", 1)
        (docs / name).write_text(page(parts, name))
    before, encoder.threads = encoder.embedded, []
    heard: list[tuple[int, int | None]] = []
    summary = ix.ingest(docs, progress=lambda done, total: heard.append((done, total)))
    assert summary.updated == 40 and summary.passages_embedded == encoder.embedded - before == 40
    assert summary.passages_reused == n - 40
    assert any(name.startswith("ingest-embed") for name in encoder.threads)  # the worker embedded some
    # (the first report, once the total is known, counts what the worker embedded while the files were read)
    assert heard[0][1] == summary.passages_embedded and heard[-1] == (summary.passages_embedded,) * 2
    fresh = index_at("fresh", encoder=Threads())
    fresh.ingest(docs)
    assert_same_index(ix, fresh)


def test_a_changed_text_keeps_the_vectors_of_its_unchanged_passages(
        index_at: Callable[..., Index], fake_encoder: FakeEncoder) -> None:
    parts = paragraphs(60)
    ix = index_at()
    n = ix.ingest_records([("notes", "Notes", page(parts))]).passages_embedded
    parts[30] = "A paragraph written again. " + parts[30]
    before = fake_encoder.embedded
    summary = ix.ingest_records([("notes", "Notes", page(parts))])
    assert 1 <= fake_encoder.embedded - before <= 3
    assert summary.passages_reused + summary.passages_embedded >= n - 1


def test_reuse_off_embeds_every_passage_of_a_changed_file(
        tmp_path: Path, index_at: Callable[..., Index], fake_encoder: FakeEncoder) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    parts = paragraphs(60)
    (docs / "page.md").write_text(page(parts))
    ix = index_at()
    n = ix.ingest(docs).passages_embedded
    parts[3] += " More."
    (docs / "page.md").write_text(page(parts))
    before = fake_encoder.embedded
    summary = ix.ingest(docs, reuse=False)
    assert fake_encoder.embedded - before == n == summary.passages_embedded and summary.passages_reused == 0
