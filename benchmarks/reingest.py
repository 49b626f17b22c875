"""A watch session after a one-paragraph edit of a large file, and after its rename, with the stored vectors of
unchanged passages kept (ingest/reuse.py) and without (every passage of the file embedded again).

    .venv/bin/python benchmarks/reingest.py [--passages 500] [--precision auto] [--runs 1] [--json]

Writes one Markdown page of SciFact abstracts (../shared/data), a level-2 heading and the abstract for each, under
a level-1 heading, long enough for --passages passages, and ingests it into a new folder index with the index's
own encoder (the model loads and warms up then, untimed). Then, timed, the write sessions ``searchapp watch``
runs (``Index.ingest`` of the folder ``within`` the changed paths): after one sentence is added to the abstract
in the middle of the page, and after the page is renamed (its old and its new path in one session, as a rename
reaches the watcher). Each is run in two new indexes of the same page, one ingesting with ``reuse=True`` (the
default) and one with ``reuse=False``, and the report gives each session's seconds, passages embedded and kept,
and the ratio of the time without reuse to the time with it. --runs N repeats all of it and reports the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from _common import DATA, command, machine, machine_line, print_json

from searchapp import Index, IndexConfig

# A page's title; the section paths of its passages start with it, whatever the file's name.
TITLE = "SciFact abstracts"


def write_page(path: Path, passages: int) -> list[str]:
    """The page at ``path``: sections of SciFact abstracts, about ``passages`` passages of 256 word pieces (an
    abstract is one or two); the sections, as written."""
    sections: list[str] = []
    chars = 0
    with (DATA / "scifact" / "corpus.jsonl").open() as fh:
        for line in fh:
            doc = json.loads(line)
            sections.append(f"## {doc['title']}\n\n{doc['text']}")
            chars += len(doc["text"])
            if chars >= passages * 1000:  # a 256-word-piece passage of English prose is about 1,100 characters
                break
    save(path, sections)
    return sections


def save(path: Path, sections: list[str]) -> None:
    path.write_text(f"# {TITLE}\n\n" + "\n\n".join(sections) + "\n")


def sessions(folder: Path, scratch: Path, sections: list[str], precision: str, reuse: bool) -> dict[str, object]:
    """A new index of ``folder``'s page, then the edit's session and the rename's, timed."""
    page = folder / "page.md"
    save(page, sections)
    out: dict[str, object] = {}
    with Index(str(scratch / f"ix-{'reuse' if reuse else 'no-reuse'}"), create=True,
               config=IndexConfig(precision=precision)) as ix:
        first = ix.ingest(folder, reuse=reuse)
        out["passages"] = first.passages_embedded
        edited = list(sections)
        middle = len(edited) // 2
        edited[middle] += " These findings were later confirmed in a larger cohort."
        save(page, edited)
        summary = ix.ingest(folder, within=[str(page)], reuse=reuse)
        out.update(edit_s=round(summary.seconds, 3), edit_embedded=summary.passages_embedded,
                   edit_reused=summary.passages_reused)
        renamed = folder / "renamed.md"
        os.rename(page, renamed)
        summary = ix.ingest(folder, within=[str(page), str(renamed)], reuse=reuse)
        out.update(rename_s=round(summary.seconds, 3), rename_embedded=summary.passages_embedded,
                   rename_reused=summary.passages_reused)
        os.rename(renamed, page)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=500, help="about this many passages in the page")
    ap.add_argument("--precision", default="auto", help="the index's precision (auto: what a new index takes)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    record = machine()
    runs: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        sections = write_page(folder / "page.md", args.passages)
        for run in range(args.runs):
            scratch = Path(tmp) / f"run-{run}"
            scratch.mkdir()
            row: dict[str, object] = {"run": run}
            for reuse in (True, False):
                label = "reuse" if reuse else "no_reuse"
                row.update({f"{label}_{k}": v for k, v in sessions(folder, scratch, sections, args.precision,
                                                                   reuse).items()})
            runs.append(row)
    medians: dict[str, float] = {}
    for op in ("edit", "rename"):
        on = statistics.median(float(r[f"reuse_{op}_s"]) for r in runs)  # type: ignore[arg-type]
        off = statistics.median(float(r[f"no_reuse_{op}_s"]) for r in runs)  # type: ignore[arg-type]
        medians.update({f"{op}_s": round(on, 3), f"{op}_no_reuse_s": round(off, 3),
                        f"{op}_no_reuse_over_reuse": round(off / on, 1) if on else 0.0})
    result = {"command": command(), "machine": record, "passages": runs[0]["reuse_passages"], "runs": runs,
              **medians, "load_avg_1m_after": round(os.getloadavg()[0], 2)}
    if args.json:
        print_json(result)
        return
    print(f"{machine_line(record)}; one Markdown page of {result['passages']} passages, {args.runs} run(s)")
    last = runs[-1]
    for op, what in (("edit", "one sentence added"), ("rename", "renamed")):
        print(f"{op:>6} ({what}): {medians[f'{op}_s']:.2f}s with reuse ({last[f'reuse_{op}_embedded']} embedded, "
              f"{last[f'reuse_{op}_reused']} kept), {medians[f'{op}_no_reuse_s']:.2f}s without "
              f"({last[f'no_reuse_{op}_embedded']} embedded): {medians[f'{op}_no_reuse_over_reuse']}x")


if __name__ == "__main__":
    main()
