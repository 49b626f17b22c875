"""Known-item questions about a folder of documents: the questions file read and checked, and its rankings scored.

The file has one question a line, ``question<TAB>target|target...``, each target a file's path relative to the
folder (``/``-separated); a question is answered by any one of its targets. Blank lines and lines starting with
``#`` are skipped. A question's id is its line number, so that messages and run files point back into the file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from searchapp.errors import SearchappError
from searchapp.evaluate.beir import read_lines
from searchapp.evaluate.metrics import first_relevant

MISS_DEPTH = 10  # the ranks a miss's report looks at (MRR@10's)


@dataclass(frozen=True)
class Question:
    """One line of the questions file: its number, the question and the target paths (relative, ``/``-separated)."""

    line: int
    text: str
    targets: tuple[str, ...]


@dataclass(frozen=True)
class KnownItems:
    """The questions asked of one folder, in the shape the runner reads (``queries`` and ``qrels`` by id)."""

    name: str
    questions: tuple[Question, ...]
    queries: dict[str, str] = field(init=False)
    qrels: dict[str, dict[str, int]] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "queries", {str(q.line): q.text for q in self.questions})
        object.__setattr__(self, "qrels", {str(q.line): dict.fromkeys(q.targets, 1) for q in self.questions})


def _target(raw: str) -> str | None:
    """A target path in its one spelling (``a/b.md`` for ``./a//b.md``), ``None`` if it leaves the folder."""
    path = PurePosixPath(raw.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or not path.parts:
        return None
    return path.as_posix()


def read_questions(path: Path, folder: Path) -> KnownItems:
    """The questions of ``path`` about ``folder``; a malformed line, or a target that is not a file in ``folder``,
    is a one-line :class:`SearchappError` naming the file and line."""
    lines = read_lines(path)
    if lines and lines[0].startswith("\ufeff"):  # a byte-order mark, as some editors write
        lines[0] = lines[0][1:]
    questions = []
    for n, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path}:{n}"
        cols = line.split("\t")
        if len(cols) != 2:
            raise SearchappError(f"{where}: expected question<TAB>targets, got {len(cols)} tab-separated "
                                 f"column{'s' if len(cols) != 1 else ''}")
        text, spec = cols[0].strip(), cols[1].strip()
        if not text:
            raise SearchappError(f"{where}: the question is empty")
        targets: list[str] = []
        for raw in spec.split("|"):
            if not raw.strip():
                raise SearchappError(f"{where}: an empty target path (targets are separated by |)")
            target = _target(raw.strip())
            if target is None:
                raise SearchappError(f"{where}: target {raw.strip()!r} is not a path inside {folder}")
            if not (folder / target).is_file():
                raise SearchappError(f"{where}: target {target!r} is not a file in {folder}")
            if target not in targets:
                targets.append(target)
        questions.append(Question(n, text, tuple(targets)))
    if not questions:
        raise SearchappError(f"{path}: no question in it (question<TAB>targets, one a line)")
    return KnownItems(folder.name, tuple(questions))


@dataclass(frozen=True)
class Miss:
    """A question whose target was not ranked first: the rank of its first target (``None`` beyond
    :data:`MISS_DEPTH`) and the documents ranked above it (all :data:`MISS_DEPTH` of them when there is none)."""

    question: Question
    rank: int | None
    above: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        """The JSON form documented in docs/cli.md."""
        return {"line": self.question.line, "question": self.question.text, "targets": list(self.question.targets),
                "rank": self.rank, "first": self.above[0] if self.above else None, "above": list(self.above)}


def misses(items: KnownItems, ranked: Mapping[str, Sequence[str]]) -> list[Miss]:
    """The questions of ``items`` whose first target is not first in ``ranked`` (id -> documents, best first)."""
    out = []
    for q in items.questions:
        docs = list(ranked.get(str(q.line), []))[:MISS_DEPTH]
        rank = first_relevant(docs, items.qrels[str(q.line)])
        if rank != 1:
            out.append(Miss(q, rank, tuple(docs[: (rank or len(docs) + 1) - 1])))
    return out
