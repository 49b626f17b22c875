"""How long a change to a watched folder takes to be seen by a query in another process.

    .venv/bin/python benchmarks/studies/watch_latency.py [--runs 10] [--debounce 0.5] [--json]

Copies the bundled sample (data/sample) into a temporary folder and starts `searchapp watch FOLDER --json` on it
(the real model, default settings but --debounce). Once its ingest at start is done, each run writes a new file
holding a word found nowhere else, then rewrites it with another such word, then deletes it, and times from the
write (or the deletion) until a lexical query in this process finds the new word (or no longer finds the file).
Each change waits for the previous one's write session, so each is a burst of its own.

The baseline, in the same run and on another copy of the folder: what one would do without the watcher, a
`searchapp ingest FOLDER` process after the change (new process, model loaded, the folder walked and the one
file embedded), timed from its start to its exit.

A study, kept for the figure it backs: docs/cli.md, "`searchapp watch FOLDER...`".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import _path  # noqa: F401  (benchmarks/ on sys.path)
from _common import ROOT, command, machine, markdown_table, print_json

TIMEOUT_S = 120.0


def cli() -> list[str]:
    exe = Path(sys.executable).with_name("searchapp")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "searchapp"]


def until(check: Callable[[], bool], what: str) -> float:
    """Seconds until ``check()`` holds, looked at every 5 ms."""
    started = time.perf_counter()
    deadline = started + TIMEOUT_S
    while time.perf_counter() < deadline:
        if check():
            return time.perf_counter() - started
        time.sleep(0.005)
    raise SystemExit(f"not seen within {TIMEOUT_S}s: {what}")


def baseline(tmp: Path, runs: int) -> list[float]:
    """Seconds of a `searchapp ingest` process that picks up one new file, ``runs`` times."""
    folder, index = tmp / "baseline", tmp / "baseline-ix"
    shutil.copytree(ROOT / "data" / "sample", folder)
    subprocess.run([*cli(), "ingest", str(folder), "-i", str(index)], check=True, capture_output=True)
    out = []
    for i in range(runs):
        (folder / f"note{i}.txt").write_text(f"A note about the word baseline{i}word, written for the baseline.")
        started = time.perf_counter()
        subprocess.run([*cli(), "ingest", str(folder), "-i", str(index)], check=True, capture_output=True)
        out.append(time.perf_counter() - started)
    return out


def watched(tmp: Path, runs: int, debounce: float) -> dict[str, list[float]]:
    """Seconds from each change to a query that sees it, while `searchapp watch` follows the folder."""
    from searchapp import Index

    folder, index = tmp / "watched", tmp / "watched-ix"
    shutil.copytree(ROOT / "data" / "sample", folder)
    proc = subprocess.Popen([*cli(), "watch", str(folder), "-i", str(index), "--json", "--debounce", str(debounce)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    sessions: list[dict[str, object]] = []
    threading.Thread(target=lambda: sessions.extend(json.loads(line) for line in proc.stdout), daemon=True).start()
    times: dict[str, list[float]] = {"created": [], "modified": [], "deleted": []}
    try:
        until(lambda: len(sessions) >= 1, "the ingest at start")
        with Index(index, read_only=True) as ix:

            def holds(name: str, word: str) -> bool:
                return any(Path(h.path).name == name for h in ix.search(word, mode="lexical", k=5))

            def listed(name: str) -> bool:
                return name in {Path(d.path).name for d in ix.documents()}

            for i in range(runs):
                name = f"note{i}.txt"
                for kind, word in (("created", f"created{i}word"), ("modified", f"modified{i}word"),
                                   ("deleted", None)):
                    done = len(sessions)
                    if word is None:
                        (folder / name).unlink()
                        times[kind].append(until(lambda name=name: not listed(name), f"{name} deleted"))
                    else:
                        (folder / name).write_text(f"A note about the word {word}, written to be watched.")
                        times[kind].append(until(lambda n=name, w=word: holds(n, w), f"{name} {kind}"))
                    until(lambda done=done: len(sessions) > done, "the session's summary")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--debounce", type=float, default=0.5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("SEARCHAPP_ONNX", "1")
    result: dict[str, object] = {"machine": machine(), "command": command(), "debounce_s": args.debounce}
    with tempfile.TemporaryDirectory() as tmp:
        base = baseline(Path(tmp), args.runs)
        seen = watched(Path(tmp), args.runs, args.debounce)
    stats = {kind: {"median_s": round(statistics.median(v), 3), "max_s": round(max(v), 3)} for kind, v in seen.items()}
    base_median = statistics.median(base)
    result["watch"] = stats
    result["ingest_process"] = {"median_s": round(base_median, 3), "max_s": round(max(base), 3)}
    result["ratio_created_over_ingest_process"] = round(stats["created"]["median_s"] / base_median, 3)
    if args.json:
        print_json(result)
        return
    rows = [[f"watch: file {kind}", s["median_s"], s["max_s"]] for kind, s in stats.items()]
    rows.append(["baseline: a `searchapp ingest` process", round(base_median, 3), round(max(base), 3)])
    print(markdown_table(["change -> visible to a query", "median s", "max s"], rows))


if __name__ == "__main__":
    main()
