"""Recall@10 of PostgreSQL's HNSW index against exact search, on real embeddings, for vector and halfvec.

    .venv/bin/python benchmarks/pg_recall.py --index 'postgresql+psycopg://USER@/DB?host=SOCKETDIR' [--scale N]
        [--types vector halfvec] [--json]

Vectors as benchmarks/ann_recall.py takes them: the passages of the cached fp32 SciFact index (build it first with
`searchapp eval ../shared/data/scifact --split train --precision fp32`), grown with --scale to N vectors drawn
around the real ones (each a real vector plus Gaussian noise, renormalised); queries: SciFact's real queries,
encoded with the same model. Each vector type gets a new schema (HNSW at any size: vector_index ivf), loaded
through the stores' own writes; the searches are the index's own dense reads (``hnsw.ef_search`` as a query sets
it: at least 40, pgvector's default, and at least k). Exact truth: FAISS's flat inner product over the float32
vectors. Prints recall@10 of each type, its ms per query and the HNSW index's size.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from _common import DATA, print_json
from ann_recall import grow, real_vectors

from searchapp import Encoder, Index, IndexConfig
from searchapp.evaluate.beir import load_beir
from searchapp.evaluate.runner import index_path
from searchapp.store.rows import NewDocument
from searchapp.types import Document, Span


def load(ix: Index, vecs: np.ndarray) -> float:
    """The vectors as one-passage documents, through the stores' writes and flush; seconds."""
    t = time.perf_counter()
    with ix.writing():
        for start in range(0, len(vecs), 5000):
            batch = [NewDocument(Document(f"/v/{i}", "", f"passage {i}", 0.0, 10, "0" * 64), [Span(0, 10, 2)],
                                 vecs[i : i + 1]) for i in range(start, min(start + 5000, len(vecs)))]
            ix.stores.write(remove=[], add=batch)
        ix.stores.flush()
    return time.perf_counter() - t


def recall_at_10(found: list[list[int]], truth: np.ndarray) -> float:
    """Mean share of each query's exact top 10 (int64 ``(q, 10)``) among the ids found."""
    return round(float(np.mean([len(set(f) & set(t.tolist())) / 10 for f, t in zip(found, truth, strict=True)])), 4)


def ef_recall(ix: Index, qv: np.ndarray, truth: np.ndarray, ef: int, vector_type: str) -> dict[str, float]:
    """Recall@10 and ms per query of the HNSW scan with ``hnsw.ef_search`` = ``ef``, in one transaction."""
    found = []
    with ix.stores.engine.begin() as conn:
        conn.exec_driver_sql(f"SET LOCAL hnsw.ef_search = {int(ef)}")
        t = time.perf_counter()
        for q in qv:
            lit = "[" + ",".join(f"{x:.8g}" for x in q) + "]"
            rows = conn.exec_driver_sql(f"SELECT id FROM passages ORDER BY embedding <#> CAST(%(v)s AS {vector_type}) "
                                        "LIMIT 10", {"v": lit}).all()
            found.append([int(r[0]) - 1 for r in rows])  # passage ids count from 1
        ms = (time.perf_counter() - t) * 1000 / len(qv)
    return {"ef_search": ef, "recall@10": recall_at_10(found, truth), "ms_per_query": round(ms, 2)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", required=True, help="a PostgreSQL URL; schemas recall_<type>_<pid> are made in it")
    ap.add_argument("--scale", type=int, default=0)
    ap.add_argument("--noise", type=float, default=0.5)
    ap.add_argument("--types", nargs="+", default=["vector", "halfvec"], choices=("vector", "halfvec"),
                    help="the vector types to build and measure (each is an HNSW build of every vector)")
    ap.add_argument("--source", choices=("scifact", "sets"), default="scifact",
                    help="the real vectors grown from: SciFact's alone, or every visible set's as "
                    "benchmarks/ann_recall.py takes them (with all their queries)")
    ap.add_argument("--ef", type=int, nargs="*", default=[],
                    help="also recall@10 with hnsw.ef_search set to each of these (a plain ORDER BY ... LIMIT 10)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import faiss

    if args.source == "sets":
        _, parts, queries = real_vectors()
        vecs = np.vstack(parts)
    else:
        with Index(index_path(DATA / "scifact", IndexConfig(precision="fp32"))) as ix:
            _, vecs = ix.stores.vectors.vectors()
        queries = list(load_beir(DATA / "scifact", "train").queries.values())
    vecs = vecs.astype(np.float32)
    out_source = f"{len(vecs)} real vectors ({args.source})"
    if args.scale > len(vecs):
        vecs = grow(vecs, args.scale, args.noise)
        out_source += f", grown to {args.scale} (noise {args.noise})"
    qv = Encoder(precision="fp32").encode(queries, truncate=True)
    flat = faiss.IndexFlatIP(vecs.shape[1])
    flat.add(vecs)
    _, truth = flat.search(qv, 10)
    out: dict[str, object] = {"vectors": len(vecs), "source": out_source, "queries": len(qv), "rows": []}
    sep = "&" if "?" in args.index else "?"
    for vector_type in args.types:
        url = f"{args.index}{sep}schema=recall_{vector_type}_{os.getpid()}&vector_type={vector_type}"
        config = IndexConfig(dimension=vecs.shape[1], vector_index="ivf")
        with Index(url, create=True, config=config, encoder=Encoder(precision="fp32")) as ix:
            build_s = load(ix, vecs)
            found = []
            t = time.perf_counter()
            with ix.stores.reader() as reader:
                for q in qv:
                    found.append([pid - 1 for pid, _ in reader.dense(q, 10)])  # passage ids count from 1
            ms = (time.perf_counter() - t) * 1000 / len(qv)
            with ix.stores.engine.connect() as conn:
                size = conn.exec_driver_sql("SELECT pg_relation_size('passages_hnsw')").scalar_one()
            curve = [ef_recall(ix, qv, truth, ef, vector_type) for ef in args.ef]
        out["rows"].append({"vector_type": vector_type, "recall@10": recall_at_10(found, truth),  # type: ignore[union-attr]
                            "ms_per_query": round(ms, 2), "build_s": round(build_s, 1),
                            "hnsw_mb": round(size / 2**20, 1), "ef_search": curve})
    if args.json:
        print_json(out)
        return
    print(f"{out['vectors']} vectors, {out['queries']} real queries")
    for r in out["rows"]:  # type: ignore[attr-defined]
        print(f"{r['vector_type']:>8}: recall@10 {r['recall@10']:.4f}, {r['ms_per_query']} ms/query, "
              f"build {r['build_s']} s, HNSW {r['hnsw_mb']} MiB")


if __name__ == "__main__":
    main()
