"""Markup read as a reader sees it: each reader returns the text with its markup replaced by spaces of the same
length (newlines kept), so every offset into what it returns is an offset into the decoded file, with the
document's headings and title. Pure functions over ``str``; nothing heavy imported."""

from searchapp.ingest.markup.asciidoc import read_asciidoc
from searchapp.ingest.markup.blanks import Reading
from searchapp.ingest.markup.markdown import read_markdown
from searchapp.ingest.markup.rst import read_rst

__all__ = ["Reading", "read_asciidoc", "read_markdown", "read_rst"]
