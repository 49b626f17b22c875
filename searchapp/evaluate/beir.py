"""Reading BEIR-layout folders: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from searchapp.errors import SearchappError


@dataclass(frozen=True)
class BeirSet:
    """A benchmark split: corpus ``{id: (title, text)}``, the split's queries ``{id: text}`` and qrels."""

    name: str
    split: str
    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    def document_text(self, doc_id: str) -> str:
        """Title and text as one document (titles are indexed with their text)."""
        title, text = self.corpus[doc_id]
        return f"{title}\n\n{text}" if title else text


def read_lines(path: Path) -> list[str]:
    """A UTF-8 text file's lines, split at ``"\n"`` only, each without a ``"\r"`` before it; unreadable or
    undecodable files, and a line holding a NUL character, are a one-line ``SearchappError`` (naming the line).

    Not ``str.splitlines``: it also splits at form feeds, U+2028 and other separators a line may hold, which
    broke a question in two ("expected question<TAB>targets") and shifted the numbers of the lines after it.
    """
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SearchappError(f"{path}: cannot read: {exc}") from exc
    if "\0" in text:
        line = text.count("\n", 0, text.index("\0")) + 1
        raise SearchappError(f"{path}:{line}: a NUL character (a text file holds none)")
    lines = text.split("\n")
    if lines[-1] == "":  # the newline ending the last line starts none
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _jsonl(path: Path) -> list[dict[str, object]]:
    if not path.is_file():
        raise SearchappError(f"{path}: missing (expected a BEIR-layout folder)")
    rows = []
    try:
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise SearchappError(f"{path}:{n}: not JSON: {exc.msg}") from exc
                if not isinstance(row, dict) or "_id" not in row:
                    raise SearchappError(f"{path}:{n}: expected a JSON object with an \"_id\"")
                rows.append(row)
    except (OSError, UnicodeDecodeError) as exc:
        raise SearchappError(f"{path}: cannot read: {exc}") from exc
    return rows


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``query-id corpus-id score`` rows (tab-separated, with a header) -> ``{query: {doc: grade}}``."""
    if not path.is_file():
        raise SearchappError(f"{path}: missing qrels file")
    qrels: dict[str, dict[str, int]] = {}
    for n, line in enumerate(read_lines(path), start=1):
        cols = line.split("\t")
        if n == 1 and cols[0] == "query-id" or not line.strip():
            continue
        if len(cols) != 3:
            raise SearchappError(f"{path}:{n}: expected 3 tab-separated columns")
        try:
            qrels.setdefault(cols[0], {})[cols[1]] = int(float(cols[2]))
        except ValueError as exc:
            raise SearchappError(f"{path}:{n}: score {cols[2]!r} is not a number") from exc
    return qrels


def load_beir(folder: Path, split: str) -> BeirSet:
    """Load the corpus, the queries judged in ``split`` and the split's qrels."""
    qrels = read_qrels(folder / "qrels" / f"{split}.tsv")
    corpus = {
        str(r["_id"]): (str(r.get("title") or ""), str(r.get("text") or "")) for r in _jsonl(folder / "corpus.jsonl")
    }
    all_queries = {str(r["_id"]): str(r.get("text") or "") for r in _jsonl(folder / "queries.jsonl")}
    missing = [q for q in qrels if q not in all_queries]
    if missing:
        raise SearchappError(f"{folder}: {len(missing)} judged queries missing from queries.jsonl, e.g. {missing[0]}")
    return BeirSet(folder.name, split, corpus, {q: all_queries[q] for q in qrels}, qrels)
