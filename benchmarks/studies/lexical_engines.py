"""Why the folder's and PostgreSQL's lexical nDCG@10 differ on a visible split: BM25 recomputed from each
engine's own tokens, with each engine's idf, so that one difference at a time can be switched.

    .venv/bin/python benchmarks/studies/lexical_engines.py SET --split SPLIT --index 'URL&schema=S' [--folder-index DIR]

SET: a BEIR folder (or its name under ../shared/data); --index: the PostgreSQL index of it that `searchapp eval
SET --split SPLIT --precision fp32 --index URL` made; --folder-index: the folder index of it (default: the cached
fp32 one that `searchapp eval SET --split SPLIT --precision fp32` made); --json: the rows as JSON. Nothing is
written to either index.

The tokens of every passage and query, as each engine has them:

- ``fts5``: the folder's FTS5 index (``porter unicode61 remove_diacritics 2``), read back through ``fts5vocab``;
  queries through ``analysis.stems``, the same tokenizer;
- ``pg-index``: what pg_textsearch indexes, ``to_tsvector`` of each passage's lexical field
  (``passages_lexical``: FTS5's terms, since migration 0009) under the index's own text configuration; queries
  ``analysis.fts5_query_terms``, as the store sends them. It should equal ``fts5`` term for term;
- ``pg-english``: ``to_tsvector`` of the passages' text with PostgreSQL's parser and snowball English, no stopword
  list (the index's configuration before migration 0009), and of the query's words (a lexeme as often as they give
  it, as pg_textsearch counts a repeated query term);
- ``pg-porter``: the same configuration with snowball's ``porter`` stemmer (FTS5's algorithm) instead; both made
  in a scratch schema for the run and dropped after.

Each is ranked with k1 1.2, b 0.75 (both engines'), each idf: FTS5's ``ln((N - n + 0.5) / (n + 0.5))`` floored
at 1e-6, or Lucene's ``ln(1 + (N - n + 0.5) / (n + 0.5))`` (pg_textsearch's), and each passage length: its
number of tokens (FTS5's), or that number as pg_textsearch 1.0.0 keeps it, rounded down to Lucene's one-byte
norm (``SmallFloat.intToByte4``: exact below 40, then in steps of 2, 4, 8, ...; found by scoring one term in
passages of every length from 2 to 129). The average length is the exact one in both. Ties go by passage id,
and documents are folded from passages as ``searchapp eval`` does. The ``fts5``/FTS5-idf/exact cell should equal
the folder's lexical figure and ``pg-index``/Lucene-idf/norm PostgreSQL's (``pg-english``/Lucene-idf/norm was
PostgreSQL's before 0009); the rest tells which difference moves the score.

A study, kept for the figure it backs: docs/postgres.md, "Figures" ("Why lexical differs: idf and length").
"""

from __future__ import annotations

import argparse
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import _path  # noqa: F401  (benchmarks/ on sys.path)
import sqlalchemy as sa
from _common import DATA, print_json

from searchapp.analysis import fts5_query_terms, query_terms, stems
from searchapp.config import IndexConfig
from searchapp.evaluate.beir import BeirSet, load_beir
from searchapp.evaluate.metrics import evaluate, judged_queries
from searchapp.evaluate.runner import DEPTH, PASSAGE_DEPTH, index_path
from searchapp.sqlite_driver import dbapi
from searchapp.store.postgres import TEXT_CONFIG, parse_location

K1, B = 1.2, 0.75
SCRATCH = "searchapp_lexical_engines"
# A tsvector's lexemes with their positions: 'word':1,5 'other':3 (a quote doubled inside a lexeme).
_LEXEME = re.compile(r"'((?:[^']|'')*)'(?::([\d,A-D]+))?")

Tokens = dict[int, Counter[str]]  # passage id -> its terms with their counts


def idf_fts5(n_rows: int, n_hits: int) -> float:
    value = math.log((n_rows - n_hits + 0.5) / (n_hits + 0.5))
    return value if value > 0 else 1e-6


def idf_lucene(n_rows: int, n_hits: int) -> float:
    return math.log(1 + (n_rows - n_hits + 0.5) / (n_hits + 0.5))


IDFS: dict[str, Callable[[int, int], float]] = {"fts5-idf": idf_fts5, "lucene-idf": idf_lucene}


def lucene_norm(length: int) -> int:
    """``length`` through Lucene's ``SmallFloat.intToByte4`` and back: 24 values exact, then a 4-bit float."""
    rest = length - 24
    shift = rest.bit_length() - 4
    return length if rest < 16 else ((rest >> shift) << shift) + 24


LENGTHS: dict[str, Callable[[int], int]] = {"exact": lambda n: n, "norm": lucene_norm}


def rank(tokens: Tokens, doc_of: Mapping[int, str], queries: Mapping[str, Sequence[str]],
         idf: Callable[[int, int], float], kept: Callable[[int], int]) -> dict[str, list[str]]:
    """Each query's documents, best first, ``DEPTH`` long: BM25 of its terms over the passages, folded; ``kept``:
    a passage's length as the engine keeps it."""
    exact = {pid: sum(counts.values()) for pid, counts in tokens.items()}
    average = sum(exact.values()) / len(exact)
    lengths = {pid: kept(n) for pid, n in exact.items()}
    postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for pid, counts in tokens.items():
        for term, tf in counts.items():
            postings[term].append((pid, tf))
    out = {}
    for q, terms in queries.items():
        scores: dict[int, float] = defaultdict(float)
        for term in terms:
            hits = postings.get(term, [])
            weight = idf(len(tokens), len(hits)) if hits else 0.0
            for pid, tf in hits:
                scores[pid] += weight * tf * (K1 + 1) / (tf + K1 * (1 - B + B * lengths[pid] / average))
        run = sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:PASSAGE_DEPTH]
        out[q] = list(dict.fromkeys(doc_of[pid] for pid, _ in run))[:DEPTH]
    return out


def fts5_side(db: Path, data: BeirSet, qids: Sequence[str]) -> tuple[Tokens, dict[int, str], dict[str, list[str]]]:
    conn = dbapi().connect(f"file:{db}?mode=ro", uri=True)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, passages_fts, instance)")
        doc_of = dict(conn.execute("SELECT p.id, d.path FROM passages p JOIN documents d ON d.id = p.document_id"))
        tokens: Tokens = {pid: Counter() for pid in doc_of}
        for term, pid, column, _offset in conn.execute("SELECT term, doc, col, offset FROM temp.vocab"):
            if column == "text":  # a benchmark's records have no section path
                tokens[pid][term] += 1
    finally:
        conn.close()
    queries = {q: [s for found in stems(query_terms(data.queries[q])) for s in found] for q in qids}
    return tokens, doc_of, queries


def _lexemes(vector: str) -> Counter[str]:
    return Counter({lex.replace("''", "'"): len(pos.split(",")) if pos else 1 for lex, pos in _LEXEME.findall(vector)})


def _doc_of(conn: sa.Connection, schema: str) -> dict[int, str]:
    return dict(conn.execute(sa.text(
        f'SELECT p.id, d.path FROM "{schema}".passages p JOIN "{schema}".documents d ON d.id = p.document_id')).all())


def index_side(conn: sa.Connection, schema: str, data: BeirSet,
               qids: Sequence[str]) -> tuple[Tokens, dict[int, str], dict[str, list[str]]]:
    """The index's own BM25 field under its own configuration, and the store's query terms."""
    tokens = {int(pid): _lexemes(vec) for pid, vec in conn.execute(sa.text(
        f'SELECT id, to_tsvector(CAST(:c AS regconfig), lexical_text)::text FROM "{schema}".passages_lexical'),
        {"c": f'"{schema}".{TEXT_CONFIG}'})}
    return tokens, _doc_of(conn, schema), {q: fts5_query_terms(data.queries[q]) for q in qids}


def pg_side(conn: sa.Connection, schema: str, config: str, data: BeirSet,
            qids: Sequence[str]) -> tuple[Tokens, dict[int, str], dict[str, list[str]]]:
    doc_of = _doc_of(conn, schema)
    tokens = {int(pid): _lexemes(vec) for pid, vec in conn.execute(sa.text(
        f'SELECT id, to_tsvector(CAST(:c AS regconfig), text)::text FROM "{schema}".passages'), {"c": config})}
    queries = {}
    for q in qids:
        vec = conn.execute(sa.text("SELECT to_tsvector(CAST(:c AS regconfig), :t)::text"),
                           {"c": config, "t": " ".join(query_terms(data.queries[q]))}).scalar_one()
        # Each lexeme as often as the query's words give it: pg_textsearch counts a repeated query term so.
        queries[q] = [lexeme for lexeme, n in _lexemes(vec).items() for _ in range(n)]
    return tokens, doc_of, queries


@contextmanager
def scratch_configs(conn: sa.Connection) -> Iterator[dict[str, str]]:
    """PostgreSQL's English configuration with snowball's ``english`` and ``porter`` stemmers, no stopword list,
    by side name, in a scratch schema, dropped after."""
    conn.execute(sa.text(f"DROP SCHEMA IF EXISTS {SCRATCH} CASCADE"))
    conn.execute(sa.text(f"CREATE SCHEMA {SCRATCH}"))
    for language in ("english", "porter"):
        conn.execute(sa.text(f"CREATE TEXT SEARCH DICTIONARY {SCRATCH}.{language}_stem "
                             f"(TEMPLATE = snowball, Language = {language})"))
        conn.execute(sa.text(f"CREATE TEXT SEARCH CONFIGURATION {SCRATCH}.{language} (COPY = pg_catalog.english)"))
        conn.execute(sa.text(f"ALTER TEXT SEARCH CONFIGURATION {SCRATCH}.{language} "
                             f"ALTER MAPPING REPLACE english_stem WITH {SCRATCH}.{language}_stem"))
    try:
        yield {"pg-english": f"{SCRATCH}.english", "pg-porter": f"{SCRATCH}.porter"}
    finally:
        conn.execute(sa.text(f"DROP SCHEMA {SCRATCH} CASCADE"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set", help="BEIR folder, or its name under ../shared/data")
    parser.add_argument("--split", required=True)
    parser.add_argument("--index", required=True, help="the PostgreSQL index of the set (URL with &schema=)")
    parser.add_argument("--folder-index", type=Path, help="the folder index of the set (default: eval's cached fp32)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = Path(args.set) if Path(args.set).is_dir() else DATA / args.set
    data = load_beir(folder, args.split)
    qids = [q for q in data.queries if q in data.qrels]
    db = (args.folder_index or index_path(folder, IndexConfig.from_flat(precision="fp32"))) / "index.db"

    sides = {"fts5": fts5_side(db, data, qids)}
    url, schema = parse_location(args.index)
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        sides["pg-index"] = index_side(conn, schema, data, qids)
        with scratch_configs(conn) as configs:
            for name, config in configs.items():
                sides[name] = pg_side(conn, schema, config, data, qids)
    engine.dispose()

    # Passages whose terms differ between the folder's FTS5 index and PostgreSQL's BM25 field (0 since 0009).
    fts5_tokens, index_tokens = sides["fts5"][0], sides["pg-index"][0]
    differing = sum(1 for pid in fts5_tokens.keys() | index_tokens.keys()
                    if fts5_tokens.get(pid) != index_tokens.get(pid))
    rows = []
    for name, (tokens, doc_of, queries) in sides.items():
        for idf_name, idf in IDFS.items():
            for length_name, kept in LENGTHS.items():
                metrics, _skipped = evaluate(rank(tokens, doc_of, queries, idf, kept), data.qrels)
                rows.append({"tokens": name, "idf": idf_name, "length": length_name,
                             "queries": len(judged_queries(data.qrels)),
                             "ndcg@10": metrics["ndcg@10"], "recall@100": metrics["recall@100"]})
    if args.json:
        print_json({"set": folder.name, "split": args.split, "passages_differing": differing, "rows": rows})
        return
    print(f"{folder.name} ({args.split}, {rows[0]['queries']} queries); passages whose FTS5 and PostgreSQL terms "
          f"differ: {differing}")
    print(f"{'tokens':<12}{'idf':<12}{'length':<8}{'nDCG@10':>9}{'R@100':>9}")
    for r in rows:
        print(f"{r['tokens']:<12}{r['idf']:<12}{r['length']:<8}{r['ndcg@10']:>9.4f}{r['recall@100']:>9.4f}")


if __name__ == "__main__":
    main()
