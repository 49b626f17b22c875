"""How long a one-shot command takes as a whole process: ``searchapp --help`` and a ``query`` on the bundled sample,
for this checkout and, with ``--baseline DIR``, for another checkout in the same run (rounds interleaved, so that
both see the same machine load), with the ratio of the medians.

    .venv/bin/python benchmarks/startup.py --baseline /tmp/base --rounds 7 [--json]

``DIR`` is a checkout of the version to compare with (``git worktree add /tmp/base COMMIT``); each checkout runs
from its own source tree (``PYTHONPATH``) with this interpreter, and ingests the sample into an index of its own
first (an older version may not open a newer index). The model's cached graph is made before the rounds, so they
time a user's second command onwards, not the one-time preparation.

Each round also times the floor under a one-shot query: a bare Python process that imports what a query's
process must (NumPy, SQLAlchemy, FAISS, tokenizers, ONNX Runtime) and makes the model's ONNX Runtime session, with
no searchapp code at all; ``floor_ratio`` is its median over the baseline's query median, the best ratio any
version keeping these dependencies can reach.
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
# The floor: the imports a query's process cannot do without and the model's session, nothing of searchapp.
FLOOR = (
    "import sys, numpy, sqlalchemy, faiss, tokenizers, onnxruntime as ort\n"
    "o = ort.SessionOptions(); o.inter_op_num_threads = 1\n"
    "if sys.argv[1:]: ort.InferenceSession(sys.argv[1], o, providers=['CPUExecutionProvider'])\n"
)


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


def _floor(graph: Path | None, cwd: Path) -> float:
    """Seconds the :data:`FLOOR` process takes on ``graph`` (the imports alone where it is ``None``)."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR, *([str(graph)] if graph else [])], cwd=cwd, check=True,
                   capture_output=True)
    return time.perf_counter() - started


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
        from searchapp.encode.catalog import DEFAULT_MODEL
        from searchapp.encode.onnx_encoder import graph_path

        # The sample's queries embed through it (made by the ingest above), unless ONNX Runtime is off for them.
        graph: Path | None = graph_path(DEFAULT_MODEL)
        if not graph.is_file():  # type: ignore[union-attr]
            graph = None
        times: dict[str, dict[str, list[float]]] = {n: {c: [] for c in commands[n]} for n in checkouts}
        floor: list[float] = []
        for _ in range(a.rounds):
            for name, checkout in checkouts.items():
                for what, args in commands[name].items():
                    times[name][what].append(_run(checkout, args, work))
            floor.append(_floor(graph, work))
    medians = {n: {c: statistics.median(t) for c, t in by.items()} for n, by in times.items()}
    result: dict[str, object] = {"machine": machine(), "rounds": a.rounds, "median_s": medians, "all_s": times,
                                 "floor_s": statistics.median(floor), "floor_session": graph is not None}
    if a.baseline:
        result["ratio"] = {c: medians["this"][c] / medians["baseline"][c] for c in medians["this"]}
        result["floor_ratio"] = statistics.median(floor) / medians["baseline"]["query"]
    if a.json:
        print_json(result)
        return
    print(machine_line(result["machine"]))  # type: ignore[arg-type]
    for name, by in medians.items():
        print(f"{name:>8}: " + ", ".join(f"{c} {s:.3f} s" for c, s in by.items()))
    what = "imports and the model's session" if graph is not None else "imports"
    print(f"   floor: {statistics.median(floor):.3f} s (the {what} alone)")
    if a.baseline:
        print("   ratio: " + ", ".join(f"{c} {r:.2f}x" for c, r in result["ratio"].items()))  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
