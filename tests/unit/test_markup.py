"""Markup read as a reader sees it (searchapp.ingest.markup): same-length blanking with every kept character in
place, headings and titles, code left alone, bounded work on hostile input; a property test on generated
Markdown."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from searchapp.ingest.markup import read_asciidoc, read_markdown, read_rst
from searchapp.ingest.markup.blanks import Reading
from searchapp.types import Heading


def in_place(reading: Reading, source: str) -> None:
    """The reading has the source's length; each character is the source's own or a space over markup."""
    assert len(reading.text) == len(source)
    for i, (got, want) in enumerate(zip(reading.text, source, strict=True)):
        assert got == want or (got == " " and want != "\n"), (i, got, want)


def read(source: str) -> Reading:
    reading = read_markdown(source)
    in_place(reading, source)
    return reading


def words(reading: Reading) -> list[str]:
    return reading.text.split()


# --- Markdown, construct by construct ------------------------------------------------------------------------


def test_atx_and_setext_headings_anchors_stripped_none_in_code() -> None:
    source = (
        "Intro\n\n# The Title {#top}\n\nText\n\n## Second ##\n\n```sh\n# not a heading\n```\n\n"
        "Setext one\n==========\n\nSetext *two*\n---\n\n    # indented code\n\n###### Six\n####### seven\n"
    )
    reading = read(source)
    assert reading.title == "The Title"
    assert [(h.level, h.text) for h in reading.headings] == [
        (1, "The Title"), (2, "Second"), (1, "Setext one"), (2, "Setext two"), (6, "Six")]
    assert all(source[h.start - 1] == "\n" for h in reading.headings)
    assert "# not a heading" in reading.text and "# indented code" in reading.text
    assert "{#top}" not in reading.text and "####### seven" in reading.text


def test_title_is_the_first_atx_h1_outside_containers() -> None:
    assert read("Setext\n======\n\n> # quoted\n\n# Real *Title*\n").title == "Real Title"
    assert read("Only text\n").title is None


def test_front_matter_yaml_and_toml() -> None:
    reading = read("---\ntitle: Front\ntags: [a, b]\n---\n# Body\n")
    assert words(reading) == ["Body"]
    # Its title is the page's (as mkdocs, Docusaurus, Hugo and Jekyll show it), before the first heading's.
    assert reading.title == "Front"
    toml = read("+++\ntitle = 'x  y'\n+++\nBody\n")
    assert (words(toml), toml.title) == (["Body"], "x y")
    assert read("---\ntitle: >\n  folded\n---\n# Head\n").title == "Head"  # a block scalar is not read
    assert words(read("---\nnot closed\n")) == ["not", "closed"]  # a thematic break, then text


def test_admonitions_tabs_and_blocks_keep_titles_and_labels() -> None:
    source = (
        '!!! note "Use *this* one"\n    Body of the note.\n\n??? tip\n    Hidden tip.\n\n???+ warning "Open"\n'
        '    Shown.\n\n!!!note\n    No space.\n\n=== "mypy.ini"\n\n    ```ini\n    [mypy]\n    ```\n\n'
        '=== "pyproject.toml"\n    Tab two.\n\n/// details | Block title\n    type: warning\nInside the block.\n///\n\n'
        "/// version-added | v2.9\n///\n\n:::tip[Docusaurus title]\nTip body.\n:::\n\n:::note\nPlain.\n:::\n"
    )
    assert words(read(source)) == [
        "Use", "this", "one", "Body", "of", "the", "note.", "Hidden", "tip.", "Open", "Shown.", "No", "space.",
        "mypy.ini", "[mypy]", "pyproject.toml", "Tab", "two.", "Block", "title", "Inside", "the", "block.",
        "v2.9", "Docusaurus", "title", "Tip", "body.", "Plain."]


def test_admonition_content_is_not_indented_code() -> None:
    reading = read('!!! note\n    See [the guide](guide.md) and `code`.\n\n    More **text**.\n')
    assert words(reading) == ["See", "the", "guide", "and", "code", ".", "More", "text", "."]


def test_links_images_references_and_autolinks() -> None:
    source = (
        "See [the docs](https://example.com/a_(b) \"T\"), [`Field`][pydantic.Field], [dataclasses][], [short],\n"
        "![a diagram](img/x.png), <https://example.com/raw_url>, [^1] and [](){#anchor} and [unknown].\n\n"
        '[short]: https://example.com/short "Title"\n[^1]: The footnote.\n'
    )
    assert words(read(source)) == [
        "See", "the", "docs", ",", "Field", ",", "dataclasses", ",", "short", ",", "a", "diagram", ",",
        "https://example.com/raw_url", ",", "and", "and", "[unknown].", "The", "footnote."]


def test_code_spans_and_fences_are_literal() -> None:
    source = "Use `**not bold** [x](y)` and ``a ` b``.\n\n~~~\n**kept** [x](y) <!-- kept -->\n~~~\n"
    reading = read(source)
    assert "**not bold** [x](y)" in reading.text and "a ` b" in reading.text
    assert "**kept** [x](y) <!-- kept -->" in reading.text
    assert "`" not in reading.text.replace("a ` b", "")


def test_comments_html_emphasis_tables_lists_quotes() -> None:
    source = (
        "<!-- a comment\nover lines -->\nText with <!-- inline --> and <br> <b>bold</b>, **strong**, _em_,\n"
        "~~gone~~, snake_case, 2 * 3 * 4, *args stays.\n\n| Name | `a|b` |\n|:-----|------:|\n| one  | two   |\n\n"
        "- [ ] task\n* bullet\n1. numbered\n\n> [!NOTE]\n> Quoted *text*.\n\n---\n\n--8<-- \"snippet.md\"\n"
    )
    assert words(read(source)) == [
        "Text", "with", "and", "bold", ",", "strong", ",", "em", ",", "gone", ",", "snake_case,", "2", "*", "3",
        "*", "4,", "*args", "stays.", "Name", "a|b", "one", "two", "task", "bullet", "1.", "numbered", "Quoted",
        "text", "."]


def test_escapes_and_mkdocstrings_stubs() -> None:
    # An escape's backslash is blanked (where it follows a letter, the word shows a space there).
    source = "Not \\*emphasis* here.\n\n::: pydantic.BaseModel\n    options:\n      members:\n        - model_dump\n"
    assert words(read(source)) == ["Not", "*emphasis*", "here.", "pydantic.BaseModel", "model_dump"]


def test_unclosed_constructs_are_text() -> None:
    assert words(read("a <!-- never closed\n\nb **c\n\n[d](e\n")) == ["a", "<!--", "never", "closed", "b",
                                                                    "**c", "[d](e"]


# --- reStructuredText and AsciiDoc ---------------------------------------------------------------------------


RST = """\
=========
Doc Title
=========

Intro with :class:`~pydantic.BaseModel`, `Python <https://python.org>`_, ``literal*``, *emph* and **strong**.
See Python_ and [1]_ and |sub|.

Section One
-----------

.. note:: Pay attention

   Body with :ref:`the guide <guide>`.

.. code-block:: python

   x = `not` *markup*

Para::

    literal *block*

.. _guide: https://example.com

.. a comment
   continued

- bullet

Sub
~~~

Again
-----
"""


def test_rst_sections_directives_roles_and_literals() -> None:
    reading = read_rst(RST)
    in_place(reading, RST)
    assert reading.title == "Doc Title"
    assert [(h.level, h.text) for h in reading.headings] == [
        (1, "Doc Title"), (2, "Section One"), (3, "Sub"), (2, "Again")]
    assert [RST[h.start:].split("\n")[0] for h in reading.headings][1:] == ["Section One", "Sub", "Again"]
    assert words(reading) == [
        "Doc", "Title", "Intro", "with", "pydantic.BaseModel", ",", "Python", ",", "literal*", ",", "emph", "and",
        "strong", ".", "See", "Python", "and", "and", "sub", ".", "Section", "One", "Pay", "attention", "Body",
        "with", "the", "guide", ".", "x", "=", "`not`", "*markup*", "Para:", "literal", "*block*", "bullet",
        "Sub", "Again"]


ADOC = """\
= Document Title
:toc: left
:author: Someone

== Section A

See link:https://x.org[the site], https://y.org[Y site], <<sec-b,Section B>>, *bold*, _it_ and `code_*x*`.

[source,python]
----
def f(*args): return `x`
----

NOTE: Remember this.

.Block title
* item one
** item two

// a comment

=== Deep one ===

|===
| a | b
|===

image::pic.png[A picture]
include::other.adoc[]
"""


def test_asciidoc_titles_attributes_blocks_and_macros() -> None:
    reading = read_asciidoc(ADOC)
    in_place(reading, ADOC)
    assert reading.title == "Document Title"
    assert [(h.level, h.text) for h in reading.headings] == [(1, "Document Title"), (2, "Section A"),
                                                             (3, "Deep one")]
    assert words(reading) == [
        "Document", "Title", "Section", "A", "See", "the", "site", ",", "Y", "site", ",", "Section", "B", ",",
        "bold", ",", "it", "and", "code_*x*", ".", "def", "f(*args):", "return", "`x`", "Remember", "this.",
        "Block", "title", "item", "one", "item", "two", "Deep", "one", "a", "b", "A", "picture"]


# --- bounded work --------------------------------------------------------------------------------------------


HOSTILE = [
    "[a](" * 200_000,
    "[" * 400_000 + "]" * 400_000,
    "`" * 3 + " x " + "``` " * 100_000,
    "` `` ``` ```` " * 50_000,
    "*a _b " * 200_000,
    "<a " * 300_000,
    "<!-- " * 300_000,
    "[x]: " * 200_000,
    "> " * 500_000 + "text",
    "- " * 500_000 + "text",
    "    " * 200_000 + "x",
    "!!! note\n    " * 100_000,
    "[a][" * 200_000,
    "{#a " * 200_000,
    "a\n===\n" * 200_000,
]


def test_hostile_markup_of_two_megabytes_reads_in_linear_work() -> None:
    # Two megabytes, each pattern a stretch of ~130 kB: a reader quadratic in any of them would take hours on
    # its stretch (no timing is asserted: the test finishes). Lines end inside some stretches, not in others.
    share = 2_000_000 // len(HOSTILE)
    source = "\n\n".join((unit * (share // len(unit) + 1))[:share] for unit in HOSTILE)
    for reader in (read_markdown, read_rst, read_asciidoc):
        assert len(reader(source).text) == len(source)


# --- the property test ---------------------------------------------------------------------------------------


WORD = st.text(st.characters(categories=("L", "N")), min_size=1, max_size=8)
CODE_LINE = st.text(st.sampled_from("ab #*[]()!{}<>=_-|`~:/ \\\"'"), max_size=20).map(lambda s: "x" + s)
# No "]:" in code: a link whose text starts with such a code span at a line's start ("[`]:`][x]") is a link
# reference definition by CommonMark's block rules (they come before code spans), not a link.
INLINE_CODE = st.text(st.sampled_from("ab #*[]()!{}<>=_-|~:/\\ "), min_size=1, max_size=12).filter(
    lambda s: s.strip() == s and "]:" not in s)
MARKUP = set("#[](){}<>*`|!=~_-")


@dataclass
class Built:
    """A generated Markdown text and what its reading must show."""

    parts: list[str] = field(default_factory=list)
    length: int = 0
    shown: list[tuple[int, int]] = field(default_factory=list)  # spans a reader sees: kept as they are
    code: list[tuple[int, int]] = field(default_factory=list)  # code: kept as it is, markup-like or not
    headings: list[tuple[int, int, str]] = field(default_factory=list)
    title: str | None = None

    def add(self, text: str, kind: str = "markup") -> None:
        span = (self.length, self.length + len(text))
        if kind == "shown":
            self.shown.append(span)
        elif kind == "code":
            self.code.append(span)
        self.parts.append(text)
        self.length += len(text)

    def line_start(self) -> int:
        return self.length

    @property
    def text(self) -> str:
        return "".join(self.parts)


@st.composite
def inline(draw: st.DrawFn, built: Built, count: int) -> None:
    for n in range(count):
        if n:
            built.add(" ", "shown")
        kind = draw(st.sampled_from(["word", "word", "link", "ref", "collapsed", "short", "image", "auto", "code",
                                     "strong", "em", "strike", "comment", "code-link", "strong-link"]))
        word = draw(WORD)
        if kind == "word":
            built.add(word, "shown")
        elif kind == "code-link":
            built.add("[`")
            built.add(draw(INLINE_CODE), "code")
            built.add("`][pydantic.Field]")
        elif kind == "strong-link":
            built.add("**[")
            built.add(word, "shown")
            built.add("](u.md)**")
        elif kind in ("link", "image"):
            built.add("![" if kind == "image" else "[")
            built.add(word, "shown")
            built.add(draw(st.sampled_from(["](https://e.org/x_y)", "](a.md#b \"T\")", "](<a b.md>)"])))
        elif kind == "ref":
            built.add("[")
            built.add(word, "shown")
            built.add("][pydantic.Field]")
        elif kind == "collapsed":
            built.add("[")
            built.add(word, "shown")
            built.add("][]")
        elif kind == "short":
            built.add("[")
            built.add(draw(st.sampled_from(["alpha", "Beta"])), "shown")
            built.add("]")
        elif kind == "auto":
            built.add("<")
            built.add("https://e.org/" + word, "shown")
            built.add(">")
        elif kind == "code":
            built.add("`")
            built.add(draw(INLINE_CODE), "code")
            built.add("`")
        elif kind in ("strong", "em", "strike"):
            marker = {"strong": "**", "em": draw(st.sampled_from(["*", "_"])), "strike": "~~"}[kind]
            built.add(marker)
            built.add(word, "shown")
            built.add(marker)
        else:
            built.add("<!-- " + word + " -->")


@st.composite
def markdown(draw: st.DrawFn) -> Built:
    built = Built()
    if draw(st.booleans()):
        # A declared title is the page's title, before any heading's.
        built.title = draw(WORD)
        built.add("---\ntitle: " + built.title + "\n---\n")
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["para", "atx", "setext", "admonition", "tab", "block", "colon", "quote",
                                     "fence", "indented", "refs", "list", "comment", "table"]))
        if kind == "para":
            draw(inline(built, draw(st.integers(1, 6))))
            built.add("\n")
        elif kind in ("atx", "setext"):
            level = draw(st.integers(1, 6)) if kind == "atx" else draw(st.integers(1, 2))
            start = built.line_start()
            if kind == "atx":
                built.add("#" * level + " ")
            heading = draw(st.lists(WORD, min_size=1, max_size=3))
            built.add(" ".join(heading), "shown")
            if draw(st.booleans()):
                code = draw(INLINE_CODE)
                built.add(" `")
                built.add(code, "code")
                built.add("`")
                heading.extend(code.split())
            if kind == "atx":
                built.add(draw(st.sampled_from(["", " {#anchor}", " ##", " { .class }"])))
                if level == 1 and built.title is None:
                    built.title = " ".join(heading)
            else:
                built.add("\n" + ("=" if level == 1 else "-") * draw(st.integers(1, 5)))
            built.headings.append((start, level, " ".join(heading)))
            built.add("\n")
        elif kind in ("admonition", "tab"):
            built.add('!!! note "' if kind == "admonition" else '=== "')
            built.add(draw(WORD), "shown")
            built.add('"\n    ')
            draw(inline(built, draw(st.integers(1, 4))))
            built.add("\n")
        elif kind == "block":
            built.add("/// details | ")
            built.add(draw(WORD), "shown")
            built.add("\n")
            draw(inline(built, draw(st.integers(1, 4))))
            built.add("\n///\n")
        elif kind == "colon":
            built.add(":::tip[")
            built.add(draw(WORD), "shown")
            built.add("]\n")
            draw(inline(built, draw(st.integers(1, 3))))
            built.add("\n:::\n")
        elif kind == "quote":
            built.add(draw(st.sampled_from(["> ", "> [!NOTE]\n> "])))
            draw(inline(built, draw(st.integers(1, 4))))
            built.add("\n")
        elif kind == "fence":
            opener = draw(st.sampled_from(["```python\n", "~~~\n", "```{.py title=\"a\"}\n"]))
            built.add(opener)
            for line in draw(st.lists(CODE_LINE, min_size=1, max_size=4)):
                built.add(line, "code")
                built.add("\n")
            built.add(opener[:3] + "\n")
        elif kind == "indented":
            # After an unindented paragraph: right after a list item or an admonition the indented line would
            # be their content.
            built.add(draw(WORD), "shown")
            built.add("\n\n    ")
            built.add(draw(CODE_LINE), "code")
            built.add("\n")
        elif kind == "refs":
            built.add('[alpha]: https://e.org/a "Alpha"\n[beta]: <b.md>\n')
        elif kind == "list":
            for _ in range(draw(st.integers(1, 3))):
                built.add(draw(st.sampled_from(["- ", "* ", "+ ", "- [x] "])))
                draw(inline(built, draw(st.integers(1, 3))))
                built.add("\n")
        elif kind == "comment":
            built.add("<!--\n" + draw(WORD) + "\n-->\n")
        else:
            built.add("| ")
            built.add(draw(WORD), "shown")
            built.add(" | ")
            built.add(draw(WORD), "shown")
            built.add(" |\n|---|:--:|\n| ")
            built.add(draw(WORD), "shown")
            built.add(" | `")
            built.add(draw(INLINE_CODE), "code")
            built.add("` |\n")
        built.add("\n")
    # The labels that shortcut references ("[alpha]") use are defined (an undefined one is literal text).
    built.add('[Alpha]: https://e.org/a "Alpha"\n[beta]: <b.md>\n')
    return built


@settings(max_examples=300, deadline=None)
@given(markdown())
def test_generated_markdown_reads_in_place(built: Built) -> None:
    source = built.text
    reading = read(source)
    for start, end in built.shown + built.code:
        assert reading.text[start:end] == source[start:end], (source[start:end], reading.text[start:end])
    outside = list(reading.text)
    for start, end in built.code:
        outside[start:end] = " " * (end - start)
    left = set("".join(outside)) & MARKUP
    assert not left, (left, reading.text)
    assert reading.headings == tuple(Heading(*h) for h in built.headings)
    assert reading.title == built.title
