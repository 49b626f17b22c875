"""A 20 MB text file and a 2 MB line without spaces: ingested whole, with memory bounded by the file's size.

The ingest runs in a child process so that its peak resident memory (``ru_maxrss``) can be measured from a
baseline taken after the imports and the tokenizer are loaded. The encoder is a cheap stand-in (one hash per
passage): embedding 50 MB with the real model would take most of an hour on two cores, and what is measured
here is the loading, splitting and storing around it.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from searchapp import Index

# Large enough that growth with the input dominates the fixed costs (the bugs this caught grew 48 x and 70 x the
# input), small enough for the suite: 50 MB and 5 MB once took a minute of the suite's time for the same check.
BIG_BYTES = 20 * 1024 * 1024
LINE_BYTES = 2_000_000
# Peak growth allowed, per byte of input. Before the splitter tokenized in batches bounded in characters, a
# 50 MB file took 2.4 GB (48 x) and a 5 MB line 350 MB (70 x); these 55 MB now take about 250 MB (4.5 x): the
# text, its passages' copies on their way to SQLite, and the tokenizer's working memory.
MAX_GROWTH_PER_INPUT_BYTE = 8

CHILD = r"""
import json, resource, sys, zlib
import numpy as np
from searchapp import Index, IndexConfig
from searchapp.encode.tokenizer import ModelOffsets, load_tokenizer

class CheapEncoder:
    dimension = 16
    def encode(self, texts, truncate=False):
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, zlib.crc32(t.encode("utf-8", "surrogatepass")) % self.dimension] = 1.0
        return out

folder, index = sys.argv[1], sys.argv[2]
ix = Index(index, create=True, config=IndexConfig(), encoder=CheapEncoder())
load_tokenizer(ix.config.model)
ModelOffsets(ix.config.model)(["warm up the tokenizer"])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
summary = ix.ingest(folder)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
ix.close()
print(json.dumps({"growth_bytes": (peak - base) * 1024, "summary": summary.to_dict()}))
"""


def write_big(path: Path, size: int) -> None:
    """Prose-like lines with a paragraph break every few lines, written in pieces (never whole in memory)."""
    words = ("alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega index vector passage query "
             "commit model token batch signal kernel folder search rank score").split()
    rng = random.Random(7)
    written = 0
    with path.open("w", encoding="ascii") as fh:
        n = 0
        while written < size:
            lines = []
            for _ in range(1000):
                n += 1
                lines.append("\n" if n % 7 == 0 else " ".join(rng.choices(words, k=12)) + f" line {n}.\n")
            chunk = "".join(lines)
            fh.write(chunk)
            written += len(chunk)


@pytest.mark.slow
def test_20_mb_file_and_2_mb_line_ingest_whole_with_bounded_memory(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    write_big(folder / "big.txt", BIG_BYTES)
    (folder / "line.txt").write_text("y" * LINE_BYTES)
    inputs = sum(f.stat().st_size for f in folder.iterdir())
    res = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), str(tmp_path / "ix")],
        capture_output=True, text=True, timeout=600,
    )
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    summary = report["summary"]
    assert (summary["added"], summary["failed"]) == (2, 0), summary

    with Index(tmp_path / "ix") as ix:
        assert ix.stats().passages == summary["passages_embedded"]
        by_doc: dict[str, list[tuple[int, int]]] = {}
        with ix.stores.connect() as conn:
            rows = conn.execute(text(
                "SELECT d.path, p.start, p.\"end\" FROM passages p JOIN documents d ON d.id = p.document_id"
            ))
            for path, start, end in rows:
                by_doc.setdefault(Path(path).name, []).append((start, end))
        cap = ix.config.splitter.max_chars
    # Nothing dropped: between consecutive passages lies only whitespace, and the passages reach both ends.
    for name in ("big.txt", "line.txt"):
        content = (folder / name).read_text()
        spans = sorted(by_doc[name])
        assert content[: spans[0][0]].strip() == "" and content[spans[-1][1] :].strip() == "", name
        gaps = zip(spans, spans[1:], strict=False)
        assert all(content[a_end:b_start].strip() == "" for (_, a_end), (b_start, _) in gaps)
        assert max(end - start for start, end in spans) <= cap
    assert sum(end - start for start, end in by_doc["line.txt"]) == LINE_BYTES
    assert report["growth_bytes"] <= MAX_GROWTH_PER_INPUT_BYTE * inputs, (
        f"peak memory grew by {report['growth_bytes'] / 2**20:.0f} MB for {inputs / 2**20:.0f} MB of input"
    )
