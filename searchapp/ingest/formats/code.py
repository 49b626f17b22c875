"""Source code and configuration files read as text, exactly as they are (every offset into the text is an
offset into the decoded file, so each passage's line and column are the file's), with their definitions as
headings (``ingest/code/``): each passage's section is its enclosing class, function, block, table, key, target
or stage, under the file's name (the title of a code file is its name, suffix included: ``conf.py``).

These formats split at their headings (``Format.splits_at_headings``): a passage never runs from one definition
into the next, so its section is the definition it holds; a long one is split further, each piece in it."""

from __future__ import annotations

from pathlib import Path

from searchapp.ingest.code.outline import outline
from searchapp.ingest.formats.decoding import LOGGERS, decode_text
from searchapp.ingest.formats.format import Format, LoadedText, Loader
from searchapp.ingest.formats.parsers import parser_errors


def _loader(outliner: str) -> Loader:
    """A loader whose headings the named outliner (``ingest/code/outline.OUTLINERS``) finds."""

    def load(path: Path, data: bytes) -> LoadedText:
        text = decode_text(data, str(path))
        # The outliners are meant to read anything: a fault in one on some input costs that file, as a failure
        # naming it, never the rest of the ingest.
        with parser_errors(str(path), "cannot outline this file"):
            headings = outline(text, outliner, path.name)
        return LoadedText(text, path.name, headings)

    return load


def _code(name: str, suffixes: tuple[str, ...], outliner: str, names: tuple[str, ...] = ()) -> Format:
    return Format(name, suffixes, _loader(outliner), is_text=True, loggers=LOGGERS, names=names,
                  splits_at_headings=True)


PYTHON = _code("Python", (".py", ".pyi"), "python")
BRACE_CODE = _code("C-family source", (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".java", ".kt", ".scala",
                                      ".swift", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs", ".php"),
                   "braces")
RUST = _code("Rust", (".rs",), "rust")
SHELL = _code("shell script", (".sh", ".bash", ".zsh"), "blocks")
TOML = _code("TOML", (".toml",), "sections")
INI = _code("INI", (".ini", ".cfg"), "sections")
YAML = _code("YAML", (".yaml", ".yml"), "yaml")
JSON = _code("JSON", (".json",), "json")
MAKEFILE = _code("Makefile", (".mk",), "make", names=("Makefile", "makefile", "GNUmakefile"))
DOCKERFILE = _code("Dockerfile", (".dockerfile",), "docker", names=("Dockerfile", "Containerfile"))

CODE: tuple[Format, ...] = (PYTHON, BRACE_CODE, RUST, SHELL, TOML, INI, YAML, JSON, MAKEFILE, DOCKERFILE)
