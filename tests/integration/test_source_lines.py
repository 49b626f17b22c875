"""Where a hit stands in its file when the index's text is not laid out as the file is: an HTML file's own source
lines (the reader lays its visible text out anew), a PDF's page; both backends, and an older index's passages
recording them at the next ingest without embedding again."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from searchapp.cli import app
from searchapp.ingest.formats.load import load_document
from tests.cpu_time import cpu_seconds, needs_cpu_timer
from tests.unit.test_loaders import pdf_bytes

runner = CliRunner()

# Markup over many lines: a head with a script and a style, attributes over lines, nested blocks, a comment, text
# right after a multi-line start tag and after a script, a <pre>, runs of blank lines, a paragraph wrapped over
# several lines (one line of the index's text, several of the file).
FAQ = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Operations FAQ</title>
  <script>
    function rotate() {
      return "keys";
    }
  </script>
  <style>
    p { margin: 0; }
  </style>
</head>
<body
    class="faq"
    data-owner="ops">
  <h1>Operations FAQ</h1>


  <div class="section">
    <div class="question">
      <h2>How are signing keys rotated?</h2>
      <p>Operators rotate the signing keys
         every quarter with the rotate command.
         Retired keys remain valid for one week.</p>
    </div>
  </div>
  <!-- an editor's note
       spanning lines -->
  <p>Backups run nightly, <a
     href="/backups"
     title="backups">snapshots</a> are kept thirty days.</p>
  <script>track()
  </script> Auditors review the ledger monthly.
<pre>
archive --verbose
  --destination glacier
</pre>



  <ul>
    <li>Certificates expire after a year.</li>
    <li>Expired certificates are refused
        by every gateway.</li>
  </ul>
</body>
</html>
"""
WORDS = "rotate keys quarter retired backups snapshots auditors ledger glacier certificates refused gateway"


def source_line_of(word: str, line: int) -> bool:
    return word.casefold() in FAQ.split("\n")[line - 1].casefold()


def first_word(text: str) -> str:
    return re.findall(r"\w+", text)[0]


def last_word(text: str) -> str:
    return re.findall(r"\w+", text)[-1]


def check_html_hits(hits) -> None:  # type: ignore[no-untyped-def]
    assert hits
    for h in hits:
        assert h.page is None and h.column is None and h.end_column is None, h
        # The file's line of the passage's first word, and of its last.
        assert source_line_of(first_word(h.text), h.line), (h.line, h.text)
        assert source_line_of(last_word(h.text), h.end_line), (h.end_line, h.text)


def folder(tmp_path: Path, html: bool = True, pdf: list[str] | None = None) -> Path:
    """``tmp_path / "docs"`` holding ``faq.html`` (:data:`FAQ`) and, given its pages, ``log.pdf``."""
    docs = tmp_path / "docs"
    docs.mkdir()
    if html:
        (docs / "faq.html").write_text(FAQ, encoding="utf-8")
    if pdf is not None:
        (docs / "log.pdf").write_bytes(pdf_bytes(pdf))
    return docs


def cli_index(tmp_path: Path, encoder, docs: Path) -> str:  # type: ignore[no-untyped-def]
    """A folder index of ``docs`` made with ``encoder``, for the command line: its location."""
    from searchapp import Index, IndexConfig

    with Index(tmp_path / "ix", create=True, config=IndexConfig.from_flat(max_tokens=12), encoder=encoder) as ix:
        ix.ingest(docs)
    return str(tmp_path / "ix")


def test_html_hits_give_the_files_own_lines(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    ix = index_at(max_tokens=12)
    ix.ingest(folder(tmp_path))
    hits = ix.search(WORDS, k=50, mode="lexical")
    assert len(hits) >= 5 and len({h.line for h in hits}) >= 5
    check_html_hits(hits)
    # The line of the query's word: each word asked alone, wherever it sits in its passage.
    for word in ("quarter", "retired", "snapshots", "auditors", "glacier", "gateway"):
        [hit, *_] = ix.search(word, k=1, mode="lexical")
        assert source_line_of(word, hit.match_line), (word, hit.match_line, hit.text)
    # The passage's context says the same (GET /passages/{id}/context, show).
    hit = ix.search("gateway", k=1, mode="lexical")[0]
    ctx = ix.context(hit.passage_id)
    assert (ctx.line, ctx.column, ctx.end_line, ctx.source_lines) == (hit.line, None, hit.end_line, hit.source_lines)
    # A hit through JSON and back (an HTTP client's) keeps its match line.
    assert type(hit).from_dict(json.loads(json.dumps(hit.to_dict()))).match_line == hit.match_line


def test_the_cli_table_and_show_give_an_html_hits_file_line(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    location = cli_index(tmp_path, fake_encoder, folder(tmp_path))
    out = runner.invoke(app, ["query", "glacier", "--mode", "lexical", "-k", "1", "-i", location])
    assert out.exit_code == 0, out.output
    line = int(re.search(r"faq\.html:(\d+)  passage (\d+)", out.stdout).group(1))  # type: ignore[union-attr]
    assert source_line_of("glacier", line)
    as_json = json.loads(runner.invoke(app, ["query", "glacier", "--mode", "lexical", "-k", "1", "-i", location,
                                             "--json"]).stdout)["hits"][0]
    assert as_json["match_line"] == line and as_json["page"] is None and as_json["source_lines"][0][0] == 0
    shown = runner.invoke(app, ["show", str(as_json["passage_id"]), "-i", location, "-C", "1"])
    assert shown.exit_code == 0, shown.output
    # The passage's lines numbered as the file's, the context's not numbered (not known).
    numbered = {int(m.group(1)): m.group(2) for m in re.finditer(r"^ *(\d+): (.*)$", shown.stdout, re.M)}
    assert numbered and all(first_word(text) and source_line_of(first_word(text), n) for n, text in numbered.items())


def test_pdf_hits_name_their_page(tmp_path: Path, index_at) -> None:  # type: ignore[no-untyped-def]
    pages = ["The first page speaks of harbours and ships.", "The second page lists the crew and their duties.",
             "The third page describes the lighthouse keeper."]
    ix = index_at(max_tokens=12)
    ix.ingest(folder(tmp_path, html=False, pdf=pages))
    for word, page in (("harbours", 1), ("crew", 2), ("lighthouse", 3)):
        [hit] = ix.search(word, k=1, mode="lexical")
        assert hit.page == page and hit.source_lines is None, (word, hit)
        assert hit.to_dict()["page"] == page
        assert ix.context(hit.passage_id).page == page


def test_the_cli_table_and_show_name_a_pdf_hits_page(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    docs = folder(tmp_path, html=False, pdf=["Harbours and ships.", "The crew and their duties.",
                                             "The lighthouse keeper."])
    location = cli_index(tmp_path, fake_encoder, docs)
    out = runner.invoke(app, ["query", "lighthouse", "--mode", "lexical", "-k", "1", "-i", location])
    assert out.exit_code == 0, out.output
    found = re.search(r"log\.pdf#page=(\d+)  passage (\d+)", out.stdout)
    assert found is not None and found.group(1) == "3", out.stdout
    shown = runner.invoke(app, ["show", found.group(2), "-i", location])
    assert shown.exit_code == 0 and "log.pdf#page=3  passage" in shown.stdout.splitlines()[0], shown.output


def test_an_older_index_gets_source_lines_and_pages_at_the_next_ingest_without_embedding_again(  # type: ignore[no-untyped-def]
    tmp_path: Path, index_at, fake_encoder
) -> None:
    docs = folder(tmp_path, pdf=["Harbours.", "Crew.", "The lighthouse keeper."])
    ix = index_at(max_tokens=12)
    ix.ingest(docs)
    # As an index from before migration 0013 holds it: the columns NULL, the passages made by the readers' version 0.
    t = ix.stores.tables
    with ix.stores.engine.begin() as conn:
        conn.execute(update(t.passages).values(source_lines=None, page=None))
        conn.execute(update(t.documents).values(passages_version=t.documents.c.passages_version % 1000))
    [old] = ix.search("lighthouse", k=1, mode="lexical")
    assert old.page is None
    embedded = fake_encoder.embedded
    summary = ix.ingest(docs)
    assert (summary.unchanged, summary.passages_embedded, fake_encoder.embedded) == (2, 0, embedded)
    assert ix.search("lighthouse", k=1, mode="lexical")[0].page == 3
    check_html_hits(ix.search(WORDS, k=50, mode="lexical", filters={"path_glob": "*.html"}))


def test_the_html_readers_source_lines_point_at_each_lines_words(tmp_path: Path) -> None:
    (tmp_path / "faq.html").write_text(FAQ, encoding="utf-8")
    doc = load_document(tmp_path / "faq.html")
    assert doc.source_lines is not None and doc.source_lines[0][0] == 0
    for at, line in doc.source_lines:
        assert source_line_of(first_word(doc.text[at:]), line), (at, line, doc.text[at : at + 20])
    # Other formats keep the file's lines: no map.
    (tmp_path / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    assert load_document(tmp_path / "a.md").source_lines is None


# Markup that makes the source lines work hardest: start tags over lines, strings of line breaks, scripts and
# comments between words, a long <pre>, each about 0.7 MB.
HOSTILE = {
    "tags over lines": '<div\n class="a"\n data-x="1">x\ny <b\n>z</b></div>\n' * 16_000,
    "a string of breaks": "<p>" + "w \n " * 180_000 + "</p>",
    "scripts and comments": "<section><script>\n\n</script> t\n<!--\n-->u</section>" * 14_000,
    "a long pre": "<pre>" + "c\n" * 350_000 + "</pre>",
    "unclosed attributes": '<p title="x\n' * 50_000 + ">text</p>",
}


@needs_cpu_timer
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_the_html_readers_source_lines_cost_linear_time(tmp_path: Path, case: str) -> None:
    path = tmp_path / "hostile.html"
    path.write_text(f"<html><body>{HOSTILE[case]}</body></html>", encoding="utf-8")
    with cpu_seconds(20):  # a few seconds here; a rule quadratic in the lines would take minutes
        doc = load_document(path)
    assert doc.source_lines is not None
    n = doc.text.count("\n") + HOSTILE[case].count("\n") + 2
    assert all(1 <= line <= n for _, line in doc.source_lines)
