"""A documentation page's markup never reaches a passage or a snippet: what is stored and shown is the text a
reader sees, at the file's own offsets (searchapp.ingest.markup through the .md loader)."""

from __future__ import annotations

from pathlib import Path

from searchapp import Index, IndexConfig

PAGE = """\
---
title: Configuration
---
# Configuration {#config}

!!! note "Rotate the signing keys"
    Run [`keyctl rotate`][searchapp.keys.rotate] every quarter, see [the guide](guide.md#rotation).

=== "mypy.ini"

    Signing keys are listed in the [keys section][keys] of the file.

/// version-added | v2.9
Signing keys can expire.
///

<!-- signing keys: an editor's note nobody sees -->
Rotated **signing keys** stay valid for a week ![diagram of signing keys](img/keys.png).

```ini
[keys]  # signing keys, in code, stay as written: **bold** [x](y)
```

[keys]: https://example.com/keys "Keys"
"""
MARKUP = ("!!!", "===", "///", "](", "][", "{#", "<!--", "**", "---", "`", "[keys]")
CODE = "[keys]  # signing keys, in code, stay as written: **bold** [x](y)"


def markup_outside_code(text: str, offset: int) -> list[str]:
    """The markup tokens in ``text`` (which starts at ``offset`` in the file) that are not inside the code line."""
    code_start = PAGE.index(CODE)
    code = range(code_start, code_start + len(CODE))
    found = []
    for token in MARKUP:
        at = text.find(token)
        while at >= 0:
            if offset + at not in code:
                found.append(token)
            at = text.find(token, at + 1)
    return found


def test_markup_is_never_in_a_passage_or_a_snippet(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "config.md").write_text(PAGE, encoding="utf-8")
    with Index(tmp_path / "ix", create=True, config=IndexConfig.from_flat(max_tokens=32),
               encoder=fake_encoder) as ix:
        ix.ingest(docs)
        hits = ix.search("signing keys", k=20, mode="lexical")
    assert len(hits) >= 4
    for hit in hits:
        assert hit.title == "Configuration"
        # Every kept character is the file's own, at its own offset.
        for got, want in zip(hit.text, PAGE[hit.start : hit.end], strict=True):
            assert got == want or (got == " " and want != "\n")
        assert not markup_outside_code(hit.text, hit.start), hit.text
        assert hit.snippet is not None
        shown = hit.text[hit.snippet.start - hit.start : hit.snippet.end - hit.start]
        assert not markup_outside_code(shown, hit.snippet.start), shown
    assert any(CODE in hit.text for hit in hits)  # code is kept as written
    assert not any("editor's note" in h.text for h in hits)
    assert any("Rotate the signing keys" in h.text for h in hits)  # the admonition's title is text


def test_a_page_that_only_includes_another_is_skipped_as_empty_not_failed(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    """Sphinx's usual contributing.rst: its one directive is markup, so nothing is left to search."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "contributing.rst").write_text(".. include:: ../CONTRIBUTING.rst\n")
    (docs / "index.rst").write_text("Signing keys\n============\n\nRotate them every month.\n")
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        summary = ix.ingest(docs)
        assert (summary.added, summary.failed, summary.failures, summary.skipped["empty"]) == (1, 0, [], 1)
