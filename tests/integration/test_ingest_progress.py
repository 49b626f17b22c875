"""Ingest progress counts passages embedded out of a total known beforehand; the summary counts skipped files by
reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import searchapp.ingest.pipeline as pipeline
from searchapp import Index, IndexConfig
from searchapp.cli import app

runner = CliRunner()


def write_docs(root: Path) -> None:
    """Three files of very different lengths: progress by files would say little about the work left."""
    root.mkdir()
    (root / "short.txt").write_text("One short line.\n")
    (root / "long.md").write_text("\n\n".join(f"Paragraph {i} about topic {i}. " * 30 for i in range(12)))
    (root / "mid.txt").write_text("\n\n".join(f"Section {i} of a middle sized file. " * 20 for i in range(3)))


@pytest.mark.parametrize("read_ahead", [pipeline.READ_AHEAD_CHARS, 10])
def test_progress_counts_passages_out_of_the_total(tmp_path: Path, fake_encoder, monkeypatch, read_ahead: int) -> None:  # type: ignore[no-untyped-def]
    # A tiny read-ahead: the files are read again for embedding, and the total still holds.
    monkeypatch.setattr(pipeline, "READ_AHEAD_CHARS", read_ahead)
    monkeypatch.setattr(pipeline, "FLUSH_PASSAGES", 4)  # several commits
    monkeypatch.setattr(pipeline, "PROGRESS_GROUP", 4)  # several reports
    write_docs(tmp_path / "docs")
    calls: list[tuple[int, int | None]] = []
    with Index(tmp_path / "ix", create=True, config=IndexConfig.from_flat(max_tokens=64), encoder=fake_encoder) as ix:
        summary = ix.ingest(tmp_path / "docs", progress=lambda done, total: calls.append((done, total)))
    total = summary.passages_embedded
    assert total > 6 and fake_encoder.embedded == total  # many more passages than the 3 files
    # The total is known once the files are read; passages embedded meanwhile (the first files, on the worker's
    # thread) are counted in the first report, one group at a time after it.
    assert calls[0][1] == total and calls[0][0] < total
    assert calls[-1] == (total, total)
    assert all(t == total for _, t in calls) and len(calls) > 3
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_cli_prints_progress_lines_on_stderr_without_a_terminal(tmp_path: Path, fake_model, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import searchapp.cli.progress as progress

    monkeypatch.setattr(progress, "EVERY_S", 0.0)
    monkeypatch.setattr(pipeline, "FLUSH_PASSAGES", 4)
    monkeypatch.setattr(pipeline, "PROGRESS_GROUP", 4)
    write_docs(tmp_path / "docs")
    out = runner.invoke(app, ["ingest", str(tmp_path / "docs"), "--max-tokens", "64", "--json"])
    assert out.exit_code == 0, out.output
    total = json.loads(out.stdout)["passages_embedded"]
    lines = out.stderr.splitlines()
    # What the run does before it embeds, then passages out of the total with the rate and the time left.
    # (the worker embeds the first files while the others are read: the reading lines count them)
    assert [line.split(",")[0] for line in lines[:4]] == ["listing files", "reading files 1/3", "reading files 2/3",
                                                          "reading files 3/3"]
    embedded = lines[4:]
    assert len(embedded) > 2 and all(line.startswith("embedded ") and f"/{total} passages" in line
                                     for line in embedded)
    assert embedded[0].startswith("embedded ") and int(embedded[0].split()[1].split("/")[0]) < total
    assert any("passages/s, " in line and line.endswith(" left") for line in embedded[1:-1])
    assert embedded[-1].startswith(f"embedded {total}/{total} passages (100%)")
    assert "\r" not in out.stderr  # no bar redrawn in a log


def test_a_reporter_with_stages_hears_what_the_run_does_before_it_embeds(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    """Listing, reading each file, and loading the model (a lazy encoder's first use) before any passage is
    embedded: a large folder or a slow model load is not a silent wait. The model loads while the files are read
    (the first documents read are embedded meanwhile): the reading says so, and a wait for it after is a stage."""
    import threading

    from searchapp.encode.encoder import LazyEncoder

    heard: list[str] = []
    loaded = threading.Event()

    class Reporter:
        def __call__(self, done: int, total: int | None) -> None:
            heard.append(f"{done}/{total}")

        def stage(self, text: str) -> None:
            heard.append(text)
            if text == "loading the model":
                loaded.set()  # the model loads no sooner than the run says it waits for it

    def make():  # type: ignore[no-untyped-def]
        assert loaded.wait(30)
        return fake_encoder

    write_docs(tmp_path / "docs")
    # Made first, so that opening it knows the dimension and leaves the model unloaded, as a CLI run finds it.
    Index(tmp_path / "ix", create=True, config=IndexConfig.from_flat(max_tokens=64), encoder=fake_encoder).close()
    with Index(tmp_path / "ix", encoder=LazyEncoder(make)) as ix:
        summary = ix.ingest(tmp_path / "docs", progress=Reporter())
    total = summary.passages_embedded
    reading = heard[1:4]
    assert heard[0] == "listing files"
    assert [r.split(",")[0] for r in reading] == ["reading files 1/3", "reading files 2/3", "reading files 3/3"]
    # long.md, read first, gives the worker its first job: the model loads while the other two are read.
    assert reading[1:] == ["reading files 2/3, loading the model", "reading files 3/3, loading the model"]
    assert heard[4:6] == [f"0/{total}", "loading the model"] and heard[-1] == f"{total}/{total}"
    assert heard.count("loading the model") == 1


def test_skipped_files_are_counted_by_reason(tmp_path: Path, fake_model) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    (docs / ".git").mkdir(parents=True)
    (docs / ".git" / "config.txt").write_text("not walked")
    (docs / ".hidden.txt").write_text("hidden")
    (docs / "notes.xyz").write_text("no loader")
    (docs / "image.png").write_bytes(b"\x89PNG")
    (docs / "draft.md").write_text("excluded draft")
    (docs / "big.txt").write_text("word " * 300_000)
    (docs / "kept.txt").write_text("the one file indexed")
    (docs / ".gitignore").write_text("generated/\n*.log.txt\n")
    (docs / "generated").mkdir()
    (docs / "generated" / "page.md").write_text("generated, ignored")
    (docs / "run.log.txt").write_text("ignored")
    (docs / "contributing.rst").write_text(".. include:: ../CONTRIBUTING.rst\n")
    args = ["ingest", str(docs), "--exclude", "draft.*", "--max-file-mb", "1"]
    out = runner.invoke(app, [*args, "--json"])
    assert out.exit_code == 0, out.output
    summary = json.loads(out.stdout)
    assert summary["skipped"] == {"hidden": 3, "ignored": 2, "unsupported": 2, "excluded": 1, "empty": 1,
                                  "too_large": 1}
    # too large: skipped, with its warning, as before; empty (a page that only includes another): no failure
    assert (summary["added"], summary["failed"]) == (1, 1)
    human = runner.invoke(app, args)
    assert "skipped 3 hidden, 2 ignored, 2 of unsupported type, 1 excluded, 1 empty, 1 too large" in human.stdout


def test_one_large_file_reports_progress_per_batch_and_its_total_first(tmp_path: Path, fake_model, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # One document is one commit: a 50 MB single-line text (126,030 passages) printed nothing for hours, not
    # even its total (hardening, round 3).
    import searchapp.cli.progress as progress

    monkeypatch.setattr(progress, "EVERY_S", 0.0)
    monkeypatch.setattr(pipeline, "FLUSH_PASSAGES", 4)
    monkeypatch.setattr(pipeline, "PROGRESS_GROUP", 4)
    monkeypatch.setattr(pipeline, "PREFETCH_FLUSHES", 0)  # the main thread embeds it, as a file too big to wait for
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "big.txt").write_text(" ".join(f"Sentence number {i} of one long line." for i in range(60)))
    out = runner.invoke(app, ["ingest", str(tmp_path / "docs"), "--max-tokens", "32", "--json"])
    assert out.exit_code == 0, out.output
    total = json.loads(out.stdout)["passages_embedded"]
    lines = [line for line in out.stderr.splitlines() if line.startswith("embedded ")]
    assert total > 12 and lines[0] == f"embedded 0/{total} passages (0%)"
    done = [int(line.split()[1].split("/")[0]) for line in lines]
    assert done == sorted(done) and len(done) >= total // 4 and done[-1] == total
    assert len([d for d in done if 0 < d < total]) >= 3  # progress within the one file's commit, each group


def test_a_first_ingest_speaks_within_a_second_moves_each_batch_and_times_the_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A first run on an empty cache printed nothing for 28.5 s (the model's export and quantisation), then sat at
    # 0% until a group of passages committed; its summary said "embedded in 0.9s" for a 32.7 s command.
    import time

    from searchapp.cli import ingest_command
    from searchapp.cli.progress import IngestProgress
    from searchapp.encode import cached_file
    from searchapp.encode.encoder import LazyEncoder
    from tests.fakes import FakeEncoder

    batch_s, prepare_s = 0.5, 2.0

    class Slow(FakeEncoder):
        def encode(self, texts: list[str], truncate: bool = False):  # type: ignore[no-untyped-def]
            time.sleep(batch_s)
            return super().encode(texts, truncate)

    def prepared() -> Slow:  # the first use prepares the model into the cache, slowly, as a first run does
        cached_file.made(tmp_path / "cache" / "model-key.onnx",
                         lambda out: (time.sleep(prepare_s), out.write_bytes(b"graph")), "test")
        return Slow()

    (tmp_path / "cache").mkdir()
    monkeypatch.setattr(Index, "_make_encoder", lambda self: LazyEncoder(prepared))
    monkeypatch.setattr(pipeline, "PROGRESS_GROUP", 8)
    lines: list[tuple[float, str]] = []

    class Timed:
        def write(self, text: str) -> int:
            lines.extend((time.monotonic(), line) for line in text.splitlines() if line)
            return len(text)

        def flush(self) -> None:
            pass

        def isatty(self) -> bool:
            return False

    monkeypatch.setattr(ingest_command, "embedding_progress",
                        lambda: IngestProgress(stream=Timed(), terminal=False, every=0.0))  # type: ignore[arg-type]
    write_docs(tmp_path / "docs")
    began = time.monotonic()
    out = runner.invoke(app, ["ingest", str(tmp_path / "docs"), "-i", str(tmp_path / "ix"), "--max-tokens", "64",
                              "--json"])
    took = time.monotonic() - began
    assert out.exit_code == 0, out.output
    summary = json.loads(out.stdout)
    assert lines[0][0] - began < 1.0 and "preparing the model" in lines[0][1] and "once" in lines[0][1]
    embedded = [(t, int(text.split()[1].split("/")[0])) for t, text in lines if text.startswith("embedded ")]
    assert embedded[-1][1] == summary["passages_embedded"] > 4 * 8
    # From the first report to the last, the count moves at least once a batch (a generous bound for a busy
    # machine): never a stretch of several batches at one count.
    moved = [t for (t, done), (_, before) in zip(embedded[1:], embedded, strict=False) if done > before]
    gaps = [b - a for a, b in zip([embedded[0][0], *moved], moved, strict=False)]
    assert gaps and max(gaps) < 4 * batch_s, gaps
    assert abs(summary["seconds"] - took) <= 0.1 * took, (summary["seconds"], took)


def test_skipped_files_are_listed_with_their_reason(tmp_path: Path, fake_model, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # "skipped 50 of unsupported type, 1 empty", and --json only counted them.
    from searchapp.ingest import summary as summary_module

    docs = tmp_path / "docs"
    (docs / ".git").mkdir(parents=True)
    (docs / "page.md").write_text("# Page\n\nText.\n", encoding="utf-8")
    (docs / "image.png").write_bytes(b"\x89PNG")
    (docs / ".hidden.md").write_text("secret\n", encoding="utf-8")
    (docs / "build").mkdir()
    (docs / "build" / "out.md").write_text("built\n", encoding="utf-8")
    (docs / ".gitignore").write_text("build/\n", encoding="utf-8")
    for i in range(3):
        (docs / f"data{i}.bin").write_bytes(b"\x00")
    out = runner.invoke(app, ["ingest", str(docs), "-i", str(tmp_path / "ix"), "--json"])
    assert out.exit_code == 0, out.output
    listed = {(Path(s["path"]).name + ("/" if s["path"].endswith("/") else ""), s["reason"])
              for s in json.loads(out.stdout)["skipped_files"]}
    assert listed == {(".git/", "hidden"), (".hidden.md", "hidden"), (".gitignore", "hidden"), ("build/", "ignored"),
                      ("image.png", "unsupported"), ("data0.bin", "unsupported"), ("data1.bin", "unsupported"),
                      ("data2.bin", "unsupported")}
    table = runner.invoke(app, ["ingest", str(docs), "-i", str(tmp_path / "ix3"), "--list-skipped"]).stdout
    assert "skipped docs/image.png: of unsupported type" in table.replace(str(tmp_path) + "/", "")
    assert "skipped docs/build/: ignored" in table.replace(str(tmp_path) + "/", "")
    monkeypatch.setattr(summary_module, "MAX_SKIPPED_LISTED", 2)
    again = runner.invoke(app, ["ingest", str(docs), "-i", str(tmp_path / "ix2"), "--json"])
    shown = json.loads(again.stdout)
    assert len(shown["skipped_files"]) == 2 and shown["skipped_files_omitted"] == 6
