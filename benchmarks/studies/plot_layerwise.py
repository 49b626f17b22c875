"""Plot the layer-wise study: score against layer for each token pooling, one panel per set.

    .venv/bin/python benchmarks/studies/pooling_sweep.py --study layerwise --sets stsb,scifact --out layerwise.json
    .venv/bin/python benchmarks/studies/plot_layerwise.py layerwise.json --out docs/layerwise.png

Needs matplotlib (pip install matplotlib; not a dependency of searchapp).

A study, kept for the figure it backs: docs/pooling.md, "Ma et al.'s layer-wise study, on this model (STS-B dev)"
and "The same study on retrieval" (docs/layerwise.png, docs/layerwise-retrieval.png).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", type=Path)
    ap.add_argument("--out", type=Path, default=Path("docs/layerwise.png"))
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads(args.results.read_text())
    sets = list(data["results"])
    fig, axes = plt.subplots(1, len(sets), figsize=(5 * len(sets), 3.6))
    for ax, name in zip([axes] if len(sets) == 1 else axes, sets, strict=True):
        scores = data["results"][name]
        for token in ("mean", "max", "cls", "sep"):
            points = sorted((int(m.group(1)), v) for k, v in scores.items()
                            if (m := re.fullmatch(rf"layer (\d+) {token}", k)))
            ax.plot([p for p, _ in points], [v for _, v in points], marker="o", label=f"{token}")
        ax.axhline(scores["mean (default)"], color="grey", linestyle=":", label="mean, last layer (default)")
        ax.axhline(scores["concat all"], color="black", linestyle="--", label="concat of all layers, mean")
        ax.set_title(f"{data['model']}: {name}")
        ax.set_xlabel("hidden state (0 = embeddings)")
        ax.set_ylabel("Spearman x 100" if name.startswith("stsb") else "nDCG@10 (dense)")
        ax.grid(alpha=0.3)
    (axes if len(sets) == 1 else axes[0]).legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)


if __name__ == "__main__":
    main()
