"""A corpus of odd and hostile files: each ends as a clean skip with a reason or a correct ingest."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchapp import Index, IndexConfig
from searchapp.cli import app

LONG_LINE = 5_000_000


def build(root: Path) -> None:
    root.mkdir()
    (root / "zero.txt").write_bytes(b"")
    (root / "binary.txt").write_bytes(bytes(range(256)) * 64)
    (root / "bad-utf8.txt").write_bytes("Grüße aus Köln, ça va très bien.".encode("latin-1") + b"\xff\xfe ok")
    (root / "long-line.txt").write_text("x" * LONG_LINE)  # one line, no spaces
    deep = root
    for i in range(30):
        deep = deep / f"level{i}"
    deep.mkdir(parents=True)
    (deep / "deep.md").write_text("# Deep\n\nFound at the bottom of thirty folders.\n")
    (root / "loop").mkdir()
    os.symlink(root, root / "loop" / "back", target_is_directory=True)
    (root / "script.html").write_text(
        "<html><head><title>T</title><script>alert('x')</script><style>p{}</style></head>"
        "<body><p>Caf&eacute; &amp; cr&egrave;me</p></body></html>"
    )
    (root / "name with spaces ünïcödé.txt").write_text("Unicode names are fine.\n")
    (root / "broken.docx").write_bytes(b"PK\x03\x04" + os.urandom(200))
    (root / "broken.pdf").write_bytes(b"%PDF-1.7\n" + os.urandom(300))


@pytest.mark.slow
def test_hostile_corpus_skips_cleanly_and_ingests_the_rest(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    build(tmp_path / "c")
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        summary = ix.ingest(tmp_path / "c")
        failed = {Path(p).name: r for p, r in summary.failures}
        assert set(failed) == {"binary.txt", "broken.docx", "broken.pdf"} and summary.skipped["empty"] == 1
        assert all(r and "\n" not in r for r in failed.values())
        assert summary.added == 5
        assert ix.search("thirty folders", k=1, mode="lexical")[0].title == "Deep"
        html = ix.search("crème café", k=1, mode="lexical")[0]
        assert "alert" not in html.text and "Café & crème" in html.text
        assert ix.search("Köln", k=1, mode="lexical")[0].path.endswith("bad-utf8.txt")
        assert ix.search("Unicode names", k=1, mode="lexical")[0].path.endswith("ünïcödé.txt")
        # The 5 MB line is cut into passages within the character cap, none lost.
        long = [r for r in ix.stores.hydrate(sorted(ix.stores.passage_documents())).values()
                if r.path.endswith("long-line.txt")]
        assert sum(r.end - r.start for r in long) == LONG_LINE
        assert max(r.end - r.start for r in long) <= ix.config.splitter.max_chars
        again = ix.ingest(tmp_path / "c")
        assert (again.added, again.updated, again.passages_embedded) == (0, 0, 0)


def test_file_name_that_is_not_utf8_is_a_warning_not_a_failed_batch(tmp_path: Path, real_encoder) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    # Bytes that are not UTF-8 (a Latin-1 name); Python keeps them as surrogates, which SQLite cannot store.
    with open(os.fsencode(docs) + b"/caf\xe9 menu.txt", "w") as fh:
        fh.write("The cafe menu lists soups.\n")
    (docs / "ok.txt").write_text("Tomatoes need water in summer.\n")
    res = CliRunner().invoke(app, ["ingest", str(docs), "--index", str(tmp_path / "ix"), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert (summary["added"], summary["failed"]) == (1, 1)
    assert summary["failures"][0]["reason"] == "file name is not UTF-8"
    assert summary["failures"][0]["path"].endswith("caf\ufffd menu.txt")
    warnings = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "not UTF-8" in warnings[0]
    with Index(tmp_path / "ix") as ix:
        assert Path(ix.search("tomatoes", k=1, mode="lexical")[0].path).name == "ok.txt"


def permissions_enforced(folder: Path) -> bool:
    """Whether this process is refused a file it has no permission to read (root with its usual capabilities is
    not: it reads anything)."""
    probe = folder / "probe"
    probe.write_text("x")
    probe.chmod(0)
    try:
        probe.read_text()
    except PermissionError:
        return True
    finally:
        probe.unlink()
    return False


def test_unreadable_file_is_skipped_and_its_indexed_version_kept(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    if not permissions_enforced(tmp_path):
        pytest.skip("this process reads files whatever their permissions (root)")
    (docs / "locked.txt").write_text("Signing keys rotate every quarter.\n")
    (docs / "open.txt").write_text("Tomatoes need water in summer.\n")
    (docs / "never.txt").write_text("This file was never readable.\n")
    (docs / "never.txt").chmod(0)
    try:
        with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
            first = ix.ingest(docs)
            assert (first.added, [Path(p).name for p, _ in first.failures]) == (2, ["never.txt"])
            assert first.failures[0][1] == "cannot read: Permission denied"
            (docs / "locked.txt").write_text("Signing keys rotate every month now.\n")
            (docs / "locked.txt").chmod(0)
            second = ix.ingest(docs)
            assert (second.failed, second.removed, second.updated) == (2, 0, 0)
            # The version indexed before the file became unreadable is still found.
            hit = ix.search("signing keys quarter", k=1, mode="lexical")[0]
            assert Path(hit.path).name == "locked.txt" and "quarter" in hit.text
    finally:
        for name in ("locked.txt", "never.txt"):
            (docs / name).chmod(0o644)


def test_unlistable_folder_is_a_warning_and_its_indexed_files_are_kept(
    tmp_path: Path, fake_encoder, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    import os

    docs = tmp_path / "docs"
    (docs / "locked").mkdir(parents=True)
    (docs / "locked" / "keys.txt").write_text("Signing keys rotate every quarter.\n")
    (docs / "open.txt").write_text("Tomatoes need water in summer.\n")
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        assert ix.ingest(docs).added == 2
        real_scandir = os.scandir

        def scandir(path):  # type: ignore[no-untyped-def]
            # chmod 000 on the folder, in a way that also holds for root
            if os.fspath(path) == str(docs / "locked"):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return real_scandir(path)

        monkeypatch.setattr(os, "scandir", scandir)
        second = ix.ingest(docs)
        assert second.failures == [(str(docs / "locked"), "cannot read folder: Permission denied")]
        assert (second.removed, second.unchanged) == (0, 1)
        assert Path(ix.search("signing keys", k=1, mode="lexical")[0].path).name == "keys.txt"
        monkeypatch.setattr(os, "scandir", real_scandir)
        (docs / "locked" / "keys.txt").unlink()
        assert ix.ingest(docs).removed == 1  # once listable again, a deleted file is removed as usual
