"""Plot query latency against index size from benchmarks/query.py --json outputs.

    .venv/bin/python benchmarks/query.py --passages 10000 --json > q10k.json   # and 100k, 1M
    .venv/bin/python benchmarks/studies/plot_latency.py q10k.json q100k.json q1m.json --out docs/latency.png

Needs matplotlib (pip install matplotlib; not a dependency of searchapp).

A study, kept for the figure it backs: docs/performance.md, "Query latency against index size" (docs/latency.png).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _path  # noqa: F401  (benchmarks/ on sys.path)
from _common import machine_line


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path("docs/latency.png"))
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = sorted((json.loads(p.read_text()) for p in args.results), key=lambda r: r["passages"])
    sizes = [r["passages"] for r in runs]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for mode, colour in (("lexical", "tab:blue"), ("dense", "tab:orange"), ("hybrid", "tab:green")):
        ax.plot(sizes, [r[f"{mode}_p50_ms"] for r in runs], "o-", color=colour, label=f"{mode} p50")
        ax.plot(sizes, [r[f"{mode}_p95_ms"] for r in runs], "o--", color=colour, alpha=0.6, label=f"{mode} p95")
    for key, colour, label in (("faiss_exact", "grey", "exact FAISS p50 (baseline)"),
                               ("rank_bm25", "tab:red", "rank_bm25 p50 (baseline)")):
        points = [(r["passages"], r[f"{key}_p50_ms"]) for r in runs if f"{key}_p50_ms" in r]
        if points:
            ax.plot(*zip(*points, strict=True), "x:", color=colour, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("passages in the index")
    ax.set_ylabel("ms per query (embedding excluded)")
    kinds = ", ".join(f"{r['passages']:,}: {r['vector_index']}" for r in runs)
    ax.set_title(f"searchapp query latency, {machine_line(runs[0]['machine'])}\nvector index {kinds}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(args.out)


if __name__ == "__main__":
    main()
