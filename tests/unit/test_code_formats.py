"""Source code and configuration files read as text and split at their definitions (searchapp.ingest.code,
searchapp.ingest.formats.code): each passage's section is its enclosing definition under the file's name, its line
and column are the file's own, and the formats that existed before keep their reader versions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from searchapp.ingest.formats import registry
from searchapp.ingest.formats.load import load_document
from searchapp.ingest.reading import FORMAT_STEP, READERS_VERSION, Task, prepare, reader_version
from searchapp.ingest.sections import document_sections
from searchapp.ingest.splitter import SplitterConfig
from searchapp.lines import positions


def words(texts: list[str]) -> list[list[tuple[int, int]]]:
    return [[(m.start(), m.end()) for m in re.finditer(r"\S+", t)] for t in texts]


def passages(path: Path, max_tokens: int = 256) -> list[tuple[str, str]]:
    """``(section, text)`` of each passage of the file at ``path``, as an ingest makes them."""
    read = prepare(Task(str(path), str(path)), SplitterConfig(max_tokens=max_tokens), words)
    assert read.failure is None and read.document is not None, read.failure
    doc = read.document
    return [(section, doc.text[s.start : s.end]) for s, section in zip(read.spans, document_sections(doc, read.spans),
                                                                         strict=True)]


def section_of(found: list[tuple[str, str]], start: str) -> str:
    return next(section for section, text in found if text.startswith(start))


PYTHON = '''"""Shapes."""
import math


# Shapes know their area.
@dataclass(frozen=True)
class Shape:
    """A shape."""

    sides: int = 0

    # Computed each time.
    @property
    def area(self) -> float:
        return math.pi

    async def grow(self):
        def inner():
            return 1
        return inner()

    colour = "red"


def free(x):
    return x


if __name__ == "__main__":
    print(free(1))
'''


def test_python_passages_know_their_class_and_function(tmp_path: Path) -> None:
    path = tmp_path / "shapes.py"
    path.write_text(PYTHON)
    found = passages(path)
    assert section_of(found, '"""Shapes."""') == "shapes.py"
    # A decorator and the comment right above a definition belong to it.
    assert section_of(found, "# Shapes know their area.\n@dataclass(frozen=True)\nclass Shape:") == "shapes.py > Shape"
    assert section_of(found, "# Computed each time.\n    @property\n    def area") == "shapes.py > Shape > area"
    assert section_of(found, "async def grow") == "shapes.py > Shape > grow"
    assert section_of(found, "def inner():") == "shapes.py > Shape > grow > inner"
    assert section_of(found, "return inner()") == "shapes.py > Shape > grow"
    # The code after a method, or after a class, is its parent's again.
    assert section_of(found, 'colour = "red"') == "shapes.py > Shape"
    assert section_of(found, "def free(x):") == "shapes.py > free"
    assert section_of(found, 'if __name__ == "__main__":') == "shapes.py"
    assert load_document(path).title == "shapes.py"


def test_a_long_function_is_split_further_and_every_piece_keeps_its_section(tmp_path: Path) -> None:
    body = "".join(f"        value_{i} = compute(value_{i - 1}, {i})\n" for i in range(1, 200))
    path = tmp_path / "long.py"
    path.write_text(f"class Engine:\n    def run(self):\n{body}\n\ndef after():\n    pass\n")
    found = passages(path, max_tokens=32)
    inside = [section for section, text in found if "value_" in text]
    assert len(inside) > 10 and set(inside) == {"long.py > Engine > run"}
    assert all(len(text.split()) <= 30 for _, text in found)
    assert section_of(found, "def after") == "long.py > after"


def test_python_that_does_not_parse_falls_back_to_top_level_blocks(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("import os\n\ndef first(:\n    pass\n\n# About second.\ndef second():\n    return 2\n")
    found = passages(path)
    assert section_of(found, "def first(:") == "broken.py > def first("
    assert section_of(found, "# About second.\ndef second") == "broken.py > def second()"


JAVASCRIPT = """import { x } from "./x.js";

// Parses the input.
export class Parser extends Base {
  constructor() {
    super("{");
  }

  /** Reads one token. */
  next(a,
       b) {
    if (a) { return `}` }
    return b;
  }
}

export function helper() {
  return { a: 1 };
}
"""

GO = """package main

import "fmt"

// Server serves.
type Server struct {
\tname string
}

func (s *Server) Serve(port int) error {
\tfmt.Println("}{")
\treturn nil
}
"""


def test_brace_languages_split_at_top_level_blocks_and_their_members(tmp_path: Path) -> None:
    js = tmp_path / "parser.js"
    js.write_text(JAVASCRIPT)
    found = passages(js)
    assert section_of(found, 'import { x }') == "parser.js"
    parser = "parser.js > export class Parser extends Base"
    assert section_of(found, "// Parses the input.\nexport class Parser") == parser
    assert section_of(found, "constructor()") == f"{parser} > constructor()"
    assert section_of(found, "/** Reads one token. */\n  next(a,") == f"{parser} > next(a,"
    assert section_of(found, "export function helper") == "parser.js > export function helper()"
    go = tmp_path / "server.go"
    go.write_text(GO)
    found = passages(go)
    assert section_of(found, "package main") == "server.go"
    assert section_of(found, "// Server serves.\ntype Server struct") == "server.go > type Server struct"
    assert section_of(found, "func (s *Server)") == "server.go > func (s *Server) Serve(port int) error"


def test_configuration_files_split_at_their_tables_and_keys(tmp_path: Path) -> None:
    toml = tmp_path / "pyproject.toml"
    toml.write_text('[project]\nname = "x"\n\n# Lint settings.\n[tool.ruff]\nline-length = 120\n'
                    '\n[[tool.mypy.overrides]]\nmodule = "y"\n')
    found = passages(toml)
    assert section_of(found, "[project]") == "pyproject.toml > [project]"
    assert section_of(found, "# Lint settings.\n[tool.ruff]") == "pyproject.toml > [tool.ruff]"
    assert section_of(found, "[[tool.mypy.overrides]]") == "pyproject.toml > [[tool.mypy.overrides]]"
    yaml = tmp_path / "mkdocs.yml"
    yaml.write_text("site_name: Docs\n\nnav:\n  - Home: index.md\n  - 'a: b'\ntheme:\n  name: material\n")
    found = passages(yaml)
    assert section_of(found, "site_name") == "mkdocs.yml > site_name"
    assert section_of(found, "nav:") == "mkdocs.yml > nav"
    assert section_of(found, "theme:") == "mkdocs.yml > theme"
    json = tmp_path / "package.json"
    json.write_text('{\n  "name": "x",\n  "scripts": {\n    "build": "tsc"\n  },\n  "dependencies": {}\n}\n')
    found = passages(json)
    assert section_of(found, '"scripts"') == "package.json > scripts"
    assert section_of(found, '"dependencies"') == "package.json > dependencies"
    ini = tmp_path / "setup.cfg"
    ini.write_text("[metadata]\nname = x\n\n[options]\nzip_safe = False\n")
    assert section_of(passages(ini), "[options]") == "setup.cfg > [options]"


def test_makefiles_and_dockerfiles_are_known_by_their_names(tmp_path: Path) -> None:
    assert registry.format_for(Path("Makefile")) is registry.format_for(Path("rules.mk"))
    assert registry.format_for(Path("docs/Dockerfile")) is not None
    assert registry.format_for(Path("Makefile.am")) is None
    assert registry.format_for(Path("Dockerfile.txt")) is registry.FORMATS[".txt"]
    make = tmp_path / "Makefile"
    make.write_text("SPHINXOPTS ?=\nBUILD := _build\n\n.PHONY: help\n# Show the targets.\nhelp:\n\t@echo help\n\n"
                    "html: clean\n\tsphinx-build -b html . $(BUILD)\n")
    found = passages(make)
    assert section_of(found, "SPHINXOPTS") == "Makefile"
    assert section_of(found, "# Show the targets.\nhelp:") == "Makefile > help"
    assert section_of(found, "html: clean") == "Makefile > html"
    docker = tmp_path / "Dockerfile"
    docker.write_text("# Build stage.\nFROM python:3.12 AS build\nRUN pip install x\n\n"
                      "FROM scratch\nCOPY --from=build /a /a\n")
    found = passages(docker)
    assert section_of(found, "# Build stage.\nFROM python") == "Dockerfile > FROM python:3.12 AS build"
    assert section_of(found, "FROM scratch") == "Dockerfile > FROM scratch"


@pytest.mark.parametrize("name", ["shapes.py", "parser.js", "server.go"])
def test_each_passage_starts_at_the_files_own_line_and_column(tmp_path: Path, name: str) -> None:
    source = {"shapes.py": PYTHON, "parser.js": JAVASCRIPT, "server.go": GO}[name]
    path = tmp_path / name
    # Written with CRLF line endings: the lines counted are still the file's (an editor's).
    path.write_bytes(source.replace("\n", "\r\n").encode())
    read = prepare(Task(str(path), str(path)), SplitterConfig(max_tokens=24), words)
    assert read.document is not None and len(read.spans) >= 3
    file_lines = path.read_bytes().decode().split("\r\n")
    text = read.document.text
    for span, where in zip(read.spans, positions(text, [s.start for s in read.spans]), strict=True):
        first = text[span.start : span.end].split("\n")[0]
        assert file_lines[where.line - 1][where.column - 1 :].startswith(first), (where, first)


def test_code_formats_split_at_their_headings_and_the_other_formats_keep_their_versions() -> None:
    # New formats claim files no version read before: adding them makes no existing file be read again. HTML and
    # PDF are read again once, on purpose (version 1): their passages' source lines and pages are recorded since.
    before = (".txt", ".md", ".markdown", ".rst", ".adoc", ".asciidoc", ".html", ".htm", ".pdf", ".docx", ".pptx",
              ".odt", ".odp", ".epub")
    for suffix in before:
        entry = registry.FORMATS[suffix]
        again = suffix in (".html", ".htm", ".pdf")
        assert entry.version == int(again) and not entry.splits_at_headings and not entry.names, suffix
        assert reader_version(f"/docs/a{suffix}") == READERS_VERSION + int(again) * FORMAT_STEP, suffix
    assert READERS_VERSION == 5
    assert FORMAT_STEP == 1000
    for suffix in (".py", ".js", ".go", ".rs", ".toml", ".yaml", ".json", ".sh"):
        assert registry.FORMATS[suffix].splits_at_headings and registry.FORMATS[suffix].is_text
    assert registry.NAMES["Makefile"].splits_at_headings and registry.NAMES["Dockerfile"].is_text
