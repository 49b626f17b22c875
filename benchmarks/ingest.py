"""Whole-ingest throughput against the raw fp32 forward pass of the same passages in the same batches.

    .venv/bin/python benchmarks/ingest.py [--docs 1000] [--precision fp32 bf16:torch bf16:openvino] [--runs 3]
        [--device cpu|cuda] [--json]
    unshare --net sh -c 'ip link set lo up && .venv/bin/python benchmarks/ingest.py --precision fp32 --workers ray'

Writes the first --docs SciFact abstracts (../shared/data) as .txt files (title + text), ingests them into a fresh
index with the index's own encoder (torch; ONNX Runtime in fp32 where it serves the pooling), loaded and warmed
beforehand by one full-length batch (everything else timed: walk, load, split, encode, SQLite, FTS5, FAISS), then
runs torch's raw forward pass alone, fp32, last layer only, over the very texts the ingest handed its encoder (each
passage with its section path, as the index embeds it), in the groups it handed them and length-sorted as its
batches are, and the index's own encoder alone (tokenising, forward pass, pooling) over the same groups. Prints
passages/s of each and the ratios of the ingest to the raw fp32 forward pass and to its own encoder, per precision.
A precision may name the backend that embeds the ingest's bf16 passages, ``bf16:torch`` or ``bf16:openvino``
(SEARCHAPP_OPENVINO=0 or 1 for that row; plain ``bf16`` takes what the environment says, encode/spec.py); the
backend that did is read back from the index (``vectors_encoder``).
--runs N repeats every row N times, each ingest into a new index with its own raw pass right after it, rows in turn
within each run, and reports each row's median ratio (``medians``). --workers ray adds a Ray Data ingest of the
same corpus into another new index (docs/distributed.md) and its throughput over the in-process ingest's; run it in
a loopback-only network namespace as above, so the local Ray cluster can reach nothing off the machine.

--index URL adds a PostgreSQL index (a new schema per run under the URL's database) in the same run: the same
ingest into it with the index's own encoder (embedding included), and, embedding excluded, the same corpus
ingested into a new folder and a new PostgreSQL schema by an encoder that hands back precomputed vectors (the
write path alone: walk, load, split, the stores' writes and index builds): keys postgresql_*, write_only_*.
--write-only (with --index) runs that last part alone, --runs times (folder then PostgreSQL each time), and
reports each run and the medians (``write_only_runs``; the other keys are the medians).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from _common import DATA, command, machine, machine_line, print_json

from searchapp import Encoder, Index, IndexConfig

try:
    from searchapp.encode.encoder import TorchEncoder
except ImportError:  # a checkout from before the name (SEARCHAPP_BENCH_CHECKOUT): torch's encoder was Encoder
    from searchapp.encode.encoder import Encoder as TorchEncoder  # type: ignore[attr-defined,no-redef]
from searchapp.encode.openvino_encoder import ENV_SWITCH as OPENVINO_SWITCH

# What a ``--precision P:BACKEND`` sets the OpenVINO switch to for that row's ingest.
BACKEND_SWITCH = {"torch": "0", "openvino": "1"}


class Precomputed:
    """Unit vectors drawn from a seed taken from each text, at the model's dimension: next to a forward pass they
    cost nothing, so an ingest with them times the write path alone (embedding excluded)."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension

    def encode(self, texts: list[str], truncate: bool = False) -> np.ndarray:
        rows = [np.random.default_rng(list(hashlib.sha256(t.encode()).digest()[:8])).standard_normal(self.dimension)
                for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dimension)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def schema_url(url: str, name: str) -> str:
    """``url`` naming the schema ``name`` (a fresh one per run: the process id in it)."""
    return f"{url}{'&' if '?' in url else '?'}schema={name}_{os.getpid()}"


def write_only(corpus: Path, tmp: Path, url: str, encoder: Precomputed, suffix: str = "") -> dict[str, object]:
    """The same ingest into a new folder and a new PostgreSQL schema, embedding excluded: passages/s of each."""
    out: dict[str, object] = {}
    for name, location in (("folder", str(tmp / "ix-write-only")),
                           ("postgresql", schema_url(url, f"write_only{suffix}"))):
        with Index(location, create=True, config=IndexConfig(precision="fp32"), encoder=encoder) as ix:
            summary = ix.ingest(corpus)
        out[f"write_only_{name}_s"] = round(summary.seconds, 2)
        out[f"write_only_{name}_passages_per_s"] = round(summary.passages_embedded / summary.seconds, 1)
    out["write_only_postgresql_over_folder"] = round(
        float(out["write_only_postgresql_passages_per_s"]) / float(out["write_only_folder_passages_per_s"]), 3)  # type: ignore[arg-type]
    return out


def write_only_runs(args: argparse.Namespace) -> None:
    """:func:`write_only` ``--runs`` times on one corpus, each run's figures and their medians."""
    record = machine()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        write_corpus(corpus, args.docs)
        encoder = Precomputed(Encoder(precision="fp32").dimension)
        runs = []
        for run in range(args.runs):
            scratch = Path(tmp) / f"run-{run}"
            scratch.mkdir()
            runs.append(write_only(corpus, scratch, args.index, encoder, suffix=str(run)))
    medians = {key: round(statistics.median(float(r[key]) for r in runs), 3) for key in runs[0]}  # type: ignore[arg-type]
    result = {"command": command(), "machine": record, "docs": args.docs, "runs": args.runs, "write_only_runs": runs,
              **medians, "load_avg_1m_after": round(os.getloadavg()[0], 2)}
    if args.json:
        print_json(result)
        return
    print(f"{machine_line(record)}; {args.docs} SciFact abstracts as .txt files, embedding excluded")
    for key, value in medians.items():
        print(f"{key}: {value} (median of {args.runs})")


def write_corpus(folder: Path, n: int) -> None:
    folder.mkdir(parents=True)
    with (DATA / "scifact" / "corpus.jsonl").open() as fh:
        for i, line in enumerate(fh):
            if i == n:
                break
            doc = json.loads(line)
            (folder / f"{doc['_id']}.txt").write_text(f"{doc['title']}\n\n{doc['text']}\n")


@contextlib.contextmanager
def recording(encoder: object) -> Iterator[list[list[str]]]:
    """The texts an ingest hands ``encoder``, one list per call, in order: what it embeds (each passage with its
    section path under the default ``passage_context`` "section") in the groups it embeds them, so the passes
    timed against the ingest do the same work, not the stored passages alone (fewer tokens)."""
    calls: list[list[str]] = []
    original = encoder.encode  # type: ignore[attr-defined]

    def encode(texts: list[str], *args: object, **kwargs: object) -> np.ndarray:
        calls.append(list(texts))
        return original(texts, *args, **kwargs)

    encoder.encode = encode  # type: ignore[attr-defined]
    try:
        yield calls
    finally:
        del encoder.encode  # type: ignore[attr-defined]


def warm(encoder: object, batch: int) -> None:
    """Embed one batch of ``batch`` texts at the model's full length: an encoder's first full-size batches in a
    process cost more (its buffers touched for the first time, kernels made for larger shapes: 0.57 s more in the
    first ingest of 400 abstracts through OpenVINO bf16, 0.05 s in the next), which is neither the pipeline's work
    nor the forward pass's, so the ingest and the passes timed against it all start past it."""
    encoder.encode(["warm up " * 400] * batch, truncate=True)  # type: ignore[attr-defined]


def raw_forward(encoder: TorchEncoder, groups: list[list[str]], batch: int) -> float:
    """Seconds of the forward pass alone over ``groups`` (each as one encode call of the ingest), each sorted by
    length and cut into batches as the encoder does (on a GPU, until its work is done)."""
    import torch

    model = encoder.model
    total = 0.0
    for group in groups:
        lengths = [len(e.ids) for e in model.tokenizer.encode_batch(group, add_special_tokens=False)]
        order = np.argsort(lengths, kind="stable")
        for i in range(0, len(group), batch):
            chunk = [group[j] for j in order[i : i + batch]]
            start = time.perf_counter()
            model.forward(chunk, all_layers=False)  # the least a forward pass can do: the last layer only
            if model.cuda:
                torch.cuda.synchronize()
            total += time.perf_counter() - start
    return total


def own_encode(encoder: object, groups: list[list[str]]) -> float:
    """Seconds of the ingest's own encoder embedding ``groups`` as the ingest handed them (tokenising, forward
    pass and pooling: everything an ingest cannot do without), with nothing else around it."""
    total = 0.0
    for group in groups:
        start = time.perf_counter()
        encoder.encode(group)  # type: ignore[attr-defined]
        total += time.perf_counter() - start
    return total


def row_spec(item: str) -> tuple[str, str | None]:
    """A --precision item, ``P`` or ``P:BACKEND``, as ``(P, BACKEND or None)``."""
    precision, _, backend = item.partition(":")
    if backend and backend not in BACKEND_SWITCH:
        raise SystemExit(f"--precision {item}: the backend is one of {', '.join(BACKEND_SWITCH)}")
    return precision, backend or None


def switched(backend: str | None) -> contextlib.AbstractContextManager[None]:
    """The OpenVINO switch as ``backend`` asks, for one row (left as it is for ``None``)."""
    if backend is None:
        return contextlib.nullcontext()
    return _env(OPENVINO_SWITCH, BACKEND_SWITCH[backend])


@contextlib.contextmanager
def _env(name: str, value: str) -> Iterator[None]:
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--precision", nargs="+", default=["fp32", "bf16"],
                    help="fp32, bf16, or bf16:torch / bf16:openvino to name the backend of that row's ingest")
    ap.add_argument("--runs", type=int, default=1, help="every row this many times, rows in turn; medians reported")
    ap.add_argument("--workers", default="local", help="local, or ray: also a Ray ingest of the same corpus in the "
                    "same run (a local Ray cluster started before the timer; its actors load the model inside it)")
    ap.add_argument("--actors", type=int, default=1)
    ap.add_argument("--index", help="also PostgreSQL, new schemas under this URL: postgresql+psycopg://USER@HOST/DB")
    ap.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N: where both the ingest and the raw forward "
                    "pass run (on a GPU the raw pass is torch in fp32 in batches of --batch)")
    ap.add_argument("--write-only", action="store_true",
                    help="with --index: only the embedding-excluded ingests, --runs times; medians reported")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.write_only:
        if not args.index:
            ap.error("--write-only needs --index URL")
        write_only_runs(args)
        return
    specs = [row_spec(p) for p in args.precision]
    record = machine()
    rows = []
    if args.workers != "local":
        import ray

        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        write_corpus(corpus, args.docs)
        fp32 = TorchEncoder(precision="fp32", batch_size=args.batch, device=args.device)  # the raw forward pass's
        warm(fp32, args.batch)
        for run, (precision, backend) in ((r, s) for r in range(args.runs) for s in specs):
            label = f"{precision}:{backend}" if backend else precision
            with switched(backend), Index(Path(tmp) / f"ix-{label}-{run}", create=True,
                                          config=IndexConfig(precision=precision), batch_size=args.batch,
                                          device=args.device) as ix:
                # The index's own encoder (fp32: ONNX Runtime where it serves the pooling), loaded beforehand.
                warm(ix.encoder, args.batch)
                with recording(ix.encoder) as groups:
                    summary = ix.ingest(corpus)
                encoder = type(ix.encoder).__name__
                embedded_with = ix.stats().to_dict()["vectors_encoder"]
                own = own_encode(ix.encoder, groups)
            n = summary.passages_embedded
            handed = sum(map(len, groups))
            if handed != n:
                raise SystemExit(f"ingest.py: the encoder was handed {handed} texts for {n} passages")
            forward = raw_forward(fp32, groups, args.batch)
            row = {
                "row": label, "run": run + 1, "precision": precision, "encoder": encoder,
                "vectors_encoder": embedded_with, "documents": summary.added, "passages": n,
                "ingest_s": round(summary.seconds, 2), "ingest_passages_per_s": round(n / summary.seconds, 1),
                "raw_fp32_forward_s": round(forward, 2), "raw_fp32_passages_per_s": round(n / forward, 1),
                "ingest_over_raw_fp32": round((n / summary.seconds) / (n / forward), 3),
                "own_encode_s": round(own, 2), "own_encode_passages_per_s": round(n / own, 1),
                "ingest_over_own_encode": round(own / summary.seconds, 3),
            }
            if args.index:
                with Index(schema_url(args.index, f"ingest_{precision}_{run}"), create=True,
                           config=IndexConfig(precision=precision), batch_size=args.batch) as pg:
                    pg.encoder.encode(["warm up"])
                    pg_summary = pg.ingest(corpus)
                row.update({
                    "postgresql_ingest_s": round(pg_summary.seconds, 2),
                    "postgresql_ingest_passages_per_s": round(n / pg_summary.seconds, 1),
                    "postgresql_over_folder": round(summary.seconds / pg_summary.seconds, 3),
                })
            if args.workers != "local":
                # No encoder handed in: the actors build the index's own (the driver's loads once, for the
                # dimension, before the timed ingest).
                ray_path = Path(tmp) / f"ix-ray-{label}-{run}"
                with Index(ray_path, create=True, config=IndexConfig(precision=precision)) as ix:
                    ray_summary = ix.ingest(corpus, workers=args.workers, actors=args.actors)
                assert ray_summary.passages_embedded == n, "the Ray ingest stored other passages"
                row.update({
                    "ray_actors": args.actors, "ray_ingest_s": round(ray_summary.seconds, 2),
                    "ray_ingest_passages_per_s": round(n / ray_summary.seconds, 1),
                    "ray_over_in_process": round(summary.seconds / ray_summary.seconds, 3),
                })
            rows.append(row)
        extra = write_only(corpus, Path(tmp), args.index, Precomputed(fp32.dimension)) if args.index else {}
    medians = {label: {key: round(statistics.median(float(r[key]) for r in rows if r["row"] == label), 3)
                       for key in ("ingest_over_raw_fp32", "ingest_over_own_encode")}
               for label in dict.fromkeys(str(r["row"]) for r in rows)}
    result = {"command": command(), "machine": record, "batch": args.batch, "device": args.device, "runs": args.runs,
              "rows": rows, "medians": medians,
              "load_avg_1m_after": round(os.getloadavg()[0], 2), **extra}
    if args.device.startswith("cuda"):
        import torch

        result["gpu"] = torch.cuda.get_device_name(torch.device(args.device))
    if args.json:
        print_json(result)
        return
    print(f"{machine_line(record)}; {args.docs} SciFact abstracts as .txt files, batch {args.batch}")
    for r in rows:
        print(f"{r['row']:>13} run {r['run']} ({r['vectors_encoder']}): "
              f"ingest {r['ingest_passages_per_s']:.1f} passages/s, "
              f"raw fp32 forward {r['raw_fp32_passages_per_s']:.1f} passages/s, ratio {r['ingest_over_raw_fp32']:.3f}; "
              f"its own encoder alone {r['own_encode_passages_per_s']:.1f} passages/s, ratio "
              f"{r['ingest_over_own_encode']:.3f}")
    for label, value in medians.items():
        print(f"{label:>13}: median ratios over {args.runs} runs: to the raw fp32 forward "
              f"{value['ingest_over_raw_fp32']:.3f}, to its own encoder {value['ingest_over_own_encode']:.3f}")
    for key, value in extra.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
