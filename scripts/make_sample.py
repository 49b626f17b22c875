"""Write data/sample/: this project's own documentation in five formats, for the demo command.

    .venv/bin/python scripts/make_sample.py

README.txt (what the sample is, :data:`DESCRIPTION`), docs/architecture.md -> architecture.md,
docs/cli.md -> cli.pdf, docs/faq.md -> faq.html, docs/glossary.md -> glossary.docx. Needs fpdf2 (a test extra)
and python-docx.
"""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "sample"
# The sample's own plain text file: what the folder holds (a copy of README.md went stale with every change to it).
DESCRIPTION = """The bundled sample: a small folder to try searchapp on, this project's own
documentation in five formats, made by scripts/make_sample.py.

    searchapp ingest data/sample
    searchapp query "your question"

Ask it what the documents say: how files become passages, what the cache
holds, which options a query takes, what the search page shows.

README.txt       this description (plain text)
architecture.md  docs/architecture.md: how searchapp is built (Markdown)
cli.pdf          docs/cli.md: the command line (PDF)
faq.html         docs/faq.md: frequently asked questions (HTML)
glossary.docx    docs/glossary.md: the words the project uses (Word)

Each copy is the documentation as it was when the sample was made; docs/ holds
the current text.
"""


def blocks(markdown: str) -> list[tuple[str, str]]:
    """Markdown as (kind, text) blocks: heading, code or paragraph; enough for our own docs."""
    out: list[tuple[str, str]] = []
    for chunk in re.split(r"\n\s*\n", markdown.strip()):
        if chunk.startswith("#"):
            # A heading is its own line: the lines after it (no blank line between) are its first paragraph.
            heading, _, rest = chunk.partition("\n")
            out.append(("heading", heading.lstrip("#").strip()))
            if rest.strip():
                out.append(("paragraph", " ".join(rest.split())))
        elif chunk.startswith(("    ", "```", "|")):
            out.append(("code", chunk.strip("`\n")))
        else:
            out.append(("paragraph", " ".join(chunk.split())))
    return out


def to_html(markdown: str) -> str:
    parts = []
    title = ""
    for kind, text in blocks(markdown):
        esc = html.escape(text)
        if kind == "heading":
            # The first heading is the page's own (its `#` line): an h1, which the section paths do not repeat
            # under the title; the others its questions.
            level = 2 if title else 1
            title = title or esc
            parts.append(f"<h{level}>{esc}</h{level}>")
        elif kind == "code":
            parts.append(f"<pre>{esc}</pre>")
        else:
            parts.append(f"<p>{esc}</p>")
    return f"<!doctype html><html><head><title>{title}</title></head><body>\n" + "\n".join(parts) + "\n</body></html>\n"


def to_pdf(markdown: str, path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_margins(15, 15)
    pdf.add_page()
    for kind, text in blocks(markdown):
        # The core PDF fonts are Latin-1 only.
        text = text.encode("latin-1", "replace").decode("latin-1")
        if kind == "heading":
            pdf.set_font("Helvetica", "B", 13)
            pdf.multi_cell(0, 7, text)
        elif kind == "code":
            pdf.set_font("Courier", size=8)
            pdf.multi_cell(0, 4, text)
        else:
            pdf.set_font("Helvetica", size=10)
            pdf.multi_cell(0, 5, text)
        pdf.ln(2)
    pdf.set_title("searchapp command line")
    pdf.output(str(path))


def to_docx(markdown: str, path: Path) -> None:
    from docx import Document

    doc = Document()
    for kind, text in blocks(markdown):
        if kind == "heading":
            doc.add_heading(text, level=1)
        else:
            for line in text.split("\n"):
                doc.add_paragraph(line)
    doc.save(str(path))


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    (OUT / "README.txt").write_text(DESCRIPTION)
    shutil.copy(ROOT / "docs" / "architecture.md", OUT / "architecture.md")
    to_pdf((ROOT / "docs" / "cli.md").read_text(), OUT / "cli.pdf")
    (OUT / "faq.html").write_text(to_html((ROOT / "docs" / "faq.md").read_text()))
    to_docx((ROOT / "docs" / "glossary.md").read_text(), OUT / "glossary.docx")


if __name__ == "__main__":
    main()
