"""How long a one-shot command takes as a whole process: ``searchapp --help`` and a ``query`` on the bundled sample,
for this checkout and, with ``--baseline DIR``, for another checkout in the same run (rounds interleaved, so that
both see the same machine load), with the ratio of the medians.

    .venv/bin/python benchmarks/startup.py --baseline /tmp/base --rounds 7 [--json]

``DIR`` is a checkout of the version to compare with (``git worktree add /tmp/base COMMIT``); each checkout runs
from its own source tree (``PYTHONPATH``) with this interpreter, and ingests the sample into an index of its own
first (an older version may not open a newer index). The model's cached graph is made before the rounds, so they
time a user's second command onwards, not the one-time preparation.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import CHECKOUT, machine, machine_line, print_json

SAMPLE = CHECKOUT / "data" / "sample"
QUERY = "how are passages split?"


def _run(checkout: Path, args: list[str], cwd: Path) -> float:
    """Seconds one ``searchapp ARGS`` process takes from start to exit (it must succeed)."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "searchapp", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: searchapp {' '.join(args)} failed: {done.stderr.strip()[-500:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, help="A checkout of the version to compare with.")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sample", type=Path, default=SAMPLE, help="The folder the query searches.")
    parser.add_argument("--json", action="store_true")
    a = parser.parse_args()
    checkouts = {"this": CHECKOUT, **({"baseline": a.baseline.resolve()} if a.baseline else {})}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        commands: dict[str, dict[str, list[str]]] = {}
        for name, checkout in checkouts.items():
            index = str(work / f"ix-{name}")
            _run(checkout, ["ingest", str(a.sample.resolve()), "-i", index], work)  # and the model's graph
            commands[name] = {"help": ["--help"], "query": ["query", QUERY, "-i", index, "-k", "5"]}
            for args in commands[name].values():  # warm: the page cache, the graph
                _run(checkout, args, work)
        times: dict[str, dict[str, list[float]]] = {n: {c: [] for c in commands[n]} for n in checkouts}
        for _ in range(a.rounds):
            for name, checkout in checkouts.items():
                for what, args in commands[name].items():
                    times[name][what].append(_run(checkout, args, work))
    medians = {n: {c: statistics.median(t) for c, t in by.items()} for n, by in times.items()}
    result: dict[str, object] = {"machine": machine(), "rounds": a.rounds, "median_s": medians,
                                 "all_s": times}
    if a.baseline:
        result["ratio"] = {c: medians["this"][c] / medians["baseline"][c] for c in medians["this"]}
    if a.json:
        print_json(result)
        return
    print(machine_line(result["machine"]))  # type: ignore[arg-type]
    for name, by in medians.items():
        print(f"{name:>8}: " + ", ".join(f"{c} {s:.3f} s" for c, s in by.items()))
    if a.baseline:
        print("   ratio: " + ", ".join(f"{c} {r:.2f}x" for c, r in result["ratio"].items()))  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
