"""Sweep pooling strategies on the visible splits, with one forward pass shared by every strategy.

    .venv/bin/python benchmarks/studies/pooling_sweep.py --out sweep.json [--sets stsb,scifact,antique,wikiqa] [--json]
    .venv/bin/python benchmarks/studies/pooling_sweep.py --study layerwise --sets stsb,scifact --out layerwise.json
    .venv/bin/python benchmarks/studies/pooling_sweep.py --study paper --model all-mpnet-base-v2 --out mpnet.json

STS-B dev: Spearman x 100 of plain cosine. Retrieval (dense retriever alone): nDCG@10 on scifact (train),
antique (train), wikiqa (dev), trecqa-dev, trecqa-train from ../shared/data. Documents are title + text, split
by the index's own splitter (256 word pieces), a document scored by its best passage. Every batch runs the
model once and pools its hidden states with every strategy, so a strategy costs its pooling only. Prints a
Markdown table.

A study, kept for the figure it backs: docs/pooling.md, "Which strategy: the sweep", the layer-wise studies and "A
larger model: all-mpnet-base-v2".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import _path  # noqa: F401  (benchmarks/ on sys.path)
import numpy as np
import torch
from _common import DATA, SETS, markdown_table, print_json

from searchapp.encode.pooling import get_pooling
from searchapp.encode.tokenizer import load_tokenizer, token_offsets
from searchapp.encode.transformer import TransformerModel
from searchapp.evaluate.beir import load_beir
from searchapp.evaluate.metrics import evaluate, spearman
from searchapp.evaluate.sts import read_sts
from searchapp.ingest.splitter import SplitterConfig, split

TOKEN_POOLINGS = ("mean", "max", "cls", "sep")


def layerwise(n_states: int) -> dict[str, tuple[str, dict[str, Any]]]:
    """Ma et al. (2019)'s study: every hidden state under every token pooling, then layers combined by
    concatenation (their combination) and by averaging, token pooling mean."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for layer in range(n_states):
        for token in TOKEN_POOLINGS:
            out[f"layer {layer} {token}"] = ("layers", {"layers": [layer], "token": token})
    last = n_states - 1
    groups = {"last 2": [last - 1, last], "last 3": [last - 2, last - 1, last], "0 + last": [0, last],
              "all": list(range(n_states))}
    for label, layers in groups.items():
        for combine in ("concat", "mean"):
            out[f"{combine} {label}"] = ("layers", {"layers": layers, "combine": combine})
    out["mean (default)"] = ("mean", {})
    out["sbert-wk (default)"] = ("sbert-wk", {})
    return out


def paper(n_states: int) -> dict[str, tuple[str, dict[str, Any]]]:
    """The few settings compared across models: the baselines, Ma et al.'s concatenation and SBERT-WK at its
    default (the paper's layer_start 4, window 2 on 12 layers, scaled to the model's depth)."""
    last = n_states - 1
    return {
        "mean": ("mean", {}),
        "max": ("max", {}),
        "cls": ("cls", {}),
        "layers mean last 2": ("layers", {"layers": [last - 1, last]}),
        "layers concat last 2": ("layers", {"layers": [last - 1, last], "combine": "concat"}),
        "layers concat 0 + last": ("layers", {"layers": [0, last], "combine": "concat"}),
        "sbert-wk (default)": ("sbert-wk", {}),
    }


def strategies(n_states: int) -> dict[str, tuple[str, dict[str, Any]]]:
    out: dict[str, tuple[str, dict[str, Any]]] = {
        "mean": ("mean", {}),
        "cls": ("cls", {}),
        "layers -2,-1": ("layers", {"layers": [-2, -1]}),
        "layers -3..-1": ("layers", {"layers": [-3, -2, -1]}),
        "layers -4..-1": ("layers", {"layers": [-4, -3, -2, -1]}),
        "layers 0,-1": ("layers", {"layers": [0, -1]}),
        "layers 1,-1": ("layers", {"layers": [1, -1]}),
        "layers all": ("layers", {"layers": list(range(n_states))}),
    }
    # SBERT-WK needs at least three layers (encode/pooling.py: MIN_WK_LAYERS); the start-5 rows of the table in
    # docs/pooling.md were measured before that rule, with the low-level function.
    for start in range(0, n_states - 2):
        for window in (1, 2, 3):
            out[f"sbert-wk start {start} m {window}"] = ("sbert-wk", {"layer_start": start, "window": window})
    for start in range(0, n_states - 2):
        out[f"wk token weights, last layer, start {start}"] = (
            "sbert-wk", {"layer_start": start, "word_vectors": "last"}
        )
    return out


def encode_all(
    model: TransformerModel, pools: dict[str, Any], texts: list[str], batch: int = 32
) -> dict[str, np.ndarray]:
    """Every strategy's unit vectors of ``texts``: ``{name: float32 (len(texts), d_name)}``."""
    lengths = [len(o) for o in token_offsets(model.tokenizer, texts)]
    order = np.argsort(lengths, kind="stable")
    # Rows are written into arrays allocated once: many small per-batch arrays kept alive between the forward
    # pass's large temporaries fragment the heap until the process holds ~35x the vectors' size (seen: 22 GB on
    # SciFact's 9,627 passages).
    out: dict[str, np.ndarray] = {}
    for i in range(0, len(texts), batch):
        idx = order[i : i + batch]
        states = model.forward([texts[j] for j in idx], truncate=True)
        for name, fn in pools.items():
            v = torch.nn.functional.normalize(fn(states.hidden_states, states.attention_mask).float(), dim=-1)
            if name not in out:
                out[name] = np.empty((len(texts), v.shape[1]), np.float32)
            out[name][idx] = v.numpy()
        if i % (batch * 50) == 0:
            print(f"# {i}/{len(texts)} texts", file=sys.stderr, flush=True)
    return out


def run_sts(model: TransformerModel, pools: dict[str, Any]) -> dict[str, float]:
    pairs = read_sts(DATA / "stsb" / "sts-dev.csv")
    uniq = sorted(set(pairs.first) | set(pairs.second))
    pos = {s: i for i, s in enumerate(uniq)}
    vecs = encode_all(model, pools, uniq)
    a = np.array([pos[s] for s in pairs.first])
    b = np.array([pos[s] for s in pairs.second])
    return {name: 100 * spearman(pairs.scores, (v[a] * v[b]).sum(1)) for name, v in vecs.items()}


def run_retrieval(model: TransformerModel, pools: dict[str, Any], name: str, split_name: str) -> dict[str, float]:
    data = load_beir(DATA / name, split_name)
    tok = load_tokenizer("all-MiniLM-L6-v2")
    cfg = SplitterConfig(max_tokens=256)
    doc_ids = list(data.corpus)
    passages: list[str] = []
    starts: list[int] = []
    for d in doc_ids:
        text = data.document_text(d)
        starts.append(len(passages))
        spans = split(text, lambda t: token_offsets(tok, t), cfg) or []
        passages.extend(text[s.start : s.end] for s in spans)
        if len(passages) == starts[-1]:
            passages.append(text or " ")
    qids = list(data.queries)
    pvecs = encode_all(model, pools, passages)
    qvecs = encode_all(model, pools, [data.queries[q] for q in qids])
    starts_arr = np.asarray(starts)
    out = {}
    for pname in pools:
        scores = qvecs[pname] @ pvecs[pname].T
        doc_scores = np.maximum.reduceat(scores, starts_arr, axis=1)
        top = np.argsort(-doc_scores, axis=1)[:, :100]
        run = {q: [doc_ids[j] for j in top[i]] for i, q in enumerate(qids)}
        out[pname] = evaluate(run, data.qrels)[0]["ndcg@10"]
    return out


STUDIES = {"sweep": strategies, "layerwise": layerwise, "paper": paper}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="stsb,scifact,antique,wikiqa")
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--json", action="store_true", help="print what --out writes instead of the table")
    ap.add_argument("--study", choices=tuple(STUDIES), default="sweep",
                    help="layerwise: Ma et al.'s study (each layer x mean/max/CLS/SEP, and layers combined); "
                    "paper: the baselines, concatenation and SBERT-WK's default, to compare models")
    args = ap.parse_args()
    model = TransformerModel(args.model, threads=args.threads)
    strat = STUDIES[args.study](model.num_layers + 1)
    pools = {name: get_pooling(p, **params) for name, (p, params) in strat.items()}
    results: dict[str, dict[str, float]] = {}
    for s in args.sets.split(","):
        t = time.time()
        if s == "stsb":
            results["stsb dev"] = run_sts(model, pools)
        else:
            results[f"{s} {SETS[s]}"] = run_retrieval(model, pools, s, SETS[s])
        print(f"# {s}: {time.time() - t:.0f}s", file=sys.stderr, flush=True)
        if args.out:
            args.out.write_text(json.dumps({"model": args.model, "strategies": strat, "results": results}, indent=1))
    if args.json:
        print_json({"model": args.model, "strategies": strat, "results": results})
        return
    cols = list(results)
    print(markdown_table(
        ["strategy", *cols],
        [[name, *(f"{results[c][name]:.1f}" if c.startswith("stsb") else f"{results[c][name]:.3f}" for c in cols)]
         for name in strat]))


if __name__ == "__main__":
    main()
