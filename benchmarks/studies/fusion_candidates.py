"""Per-query evidence that could make the adaptive rule lean further to dense on questions, measured against the
shipped default on the visible splits (docs/evaluation.md, "The held-out non-factoid gap").

    .venv/bin/python benchmarks/studies/fusion_candidates.py [--sets scifact:train,wikiqa:dev,...] [--json]
        [--family evidence|normalisation|all]

Indexes are the cached ones `searchapp eval` builds (fp32 forward pass unless --precision says); about a minute
once they are cached. Every candidate acts on questions only (``adaptive.is_question``), so SciFact's claims rank
as today. Two kinds:

- **dense top M**: BM25 reorders only the dense side's own top M candidates (fused scores as today); the other
  candidates follow in dense order.
- **a factor on the lexical weight**: the rule's dense weight ``alpha`` (``adaptive.adaptive_alpha``) becomes
  ``1 - (1 - alpha) * factor(evidence)``. Evidence: how far the dense top 1 (or top 3) stands out from the rest
  of the dense top 10 in standard deviations of the cosines over the candidates; how far down the dense ranking
  BM25's top 3 sit; the question's content terms; the dense top 1's cosine itself (a ramp to dense alone, or a
  two-sided ramp that also gives weak dense matches more lexical weight: ``cosine_ramp``).

``--family normalisation`` measures, instead, other normalisations with the rule's weights as today, on questions
and then on every query: the lexical z-scores clipped above at c, both sides' clipped, the lexical ones floored
at -c, a robust scale (median and MAD) of the lexical side or of both, and the lexical side standardised over the
dense top k candidates only; each on its own curves (about ten minutes on 2 cores). ``all`` runs both families.

Part 1: where the default's top 10 documents sit in the dense ranking; the questions in thirds by their dense
top cosine, with what convex z-score fusion at a dense weight of 0.85 gains over dense alone in each, and the
median top cosine of all questions and of those whose dense top document is long (over ``LONG`` words); how many
queries the default and "dense top M" win and lose against dense alone. Part 2: each candidate with the rule at
its default (nDCG@10, change against the default, margin over the better single retriever as mean / one-sided
95% lower bound, the rule ``searchapp tune`` chooses by; ``--json`` adds the change's paired 95% bootstrap
interval). Part 3: leave-one-collection-out as
benchmarks/studies/fusion_loco.py runs it, the candidate's setting chosen jointly with the rule's three numbers
(fusion_loco's grid) on the other collections by the largest worst lower-bound margin, then scored on the
held-out one.

Each query's nDCG@10 is tabulated once over dense weights 0, 0.001, ..., 1 (a weight is rounded to the nearest
before it is looked up); that reproduces the default's per-query figures exactly, which the script checks.

A study, kept for the figure it backs: docs/evaluation.md, "Per-query evidence for leaning to dense, measured" and
"The normalisation instead of the weight, measured".
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import _path  # noqa: F401  (benchmarks/ on sys.path)
import numpy as np
from _common import DATA, SETS_OPTION, markdown_table, parse_sets, print_json
from fusion_loco import QUESTION, SPREAD, STATEMENT, interval

from searchapp.config import IndexConfig
from searchapp.eval_index import prepare
from searchapp.evaluate.metrics import ndcg
from searchapp.evaluate.runner import Prepared
from searchapp.evaluate.stats import paired_bootstrap
from searchapp.evaluate.tune import lower_margin
from searchapp.query.adaptive import DENSE_TOP, adaptive_alpha, is_question
from searchapp.query.fusion import Fusion

STEPS = 1000  # dense weights tabulated: 0, 1/STEPS, ..., 1
TOP = 10  # nDCG@10
LONG = 60  # words of a "long" dense top document
THIRDS_WEIGHT = 0.85  # the dense weight the thirds by top cosine are scored at
# Question words and common function words: what is left of a question is its content terms.
FUNCTION_WORDS = frozenset(
    "a an the of to in on for and or is are was were be been being do does did what which who whom whose when "
    "where why how can could should would will shall has have had may might must i you he she it we they my your "
    "his her its our their me him us them this that these those there here with by from at as about into if not no "
    "so than too very just also any some".split())
_WORD = re.compile(r"[a-z]+")


@dataclass
class Query:
    """One judged query's candidates as arrays (row i: candidate i), with what the candidates say about it."""

    pids: np.ndarray  # int64 (n,)
    dense: np.ndarray  # float64 (n,), z-scored cosines
    lexical: np.ndarray  # float64 (n,), z-scored BM25
    cos: np.ndarray  # float64 (n,), the cosines themselves
    bm25: np.ndarray  # float64 (n,), the BM25 scores themselves
    dense_order: np.ndarray  # int64 (n,): candidate rows by descending cosine, ties by passage id
    question: bool
    evidence: dict[str, float]


def z(x: np.ndarray) -> np.ndarray:
    """As ``fusion.zscore``: mean 0, population sd 1, all 0 if constant."""
    sd = x.std()
    return (x - x.mean()) / sd if sd > 0 else np.zeros_like(x)


def load(p: Prepared) -> tuple[list[str], list[Query]]:
    """The judged queries of ``p`` (sorted ids) and their candidates."""
    judged = sorted(p.per_query("lexical"))
    out = []
    for qid in judged:
        c = p.runs[qid].candidates
        pids = np.array(list(c.dense), dtype=np.int64)
        cos = np.array([c.dense[i] for i in pids])
        bm25 = np.array([c.lexical[i] for i in pids])
        dense_order = np.lexsort((pids, -cos))
        lex_order = np.lexsort((pids, -bm25))
        dense_rank = np.empty(len(pids), dtype=np.int64)
        dense_rank[dense_order] = np.arange(len(pids))
        top = cos[dense_order[:DENSE_TOP]]
        sd = cos.std() or 1.0
        evidence = {
            "stand_out_1": float((top[0] - top[1:].mean()) / sd),
            "stand_out_3": float((top[:3].mean() - top[3:].mean()) / sd),
            "bm25_top3_dense_rank": float(dense_rank[lex_order[:3]].mean()),
            "content_terms": float(sum(w not in FUNCTION_WORDS for w in _WORD.findall(c.query.lower()))),
            "top_cosine": float(top[0]),
        }
        out.append(Query(pids, z(cos), z(bm25), cos, bm25, dense_order, is_question(c.query), evidence))
    return judged, out


def documents(p: Prepared, pids: np.ndarray) -> list[str]:
    """The first ``TOP`` documents of a passage ranking (a document ranks by its best passage)."""
    seen: dict[str, None] = {}
    for pid in pids:
        doc = p.doc_of.get(int(pid))
        if doc is not None and doc not in seen:
            seen[doc] = None
            if len(seen) == TOP:
                break
    return list(seen)


Sides = tuple[np.ndarray, np.ndarray]  # a query's normalised (dense, lexical) scores, float64 (n,) each


def ranking(q: Query, alpha: float, m: int | None, sides: Sides | None = None) -> np.ndarray:
    """Candidate rows in fused order at dense weight ``alpha`` (of ``sides``, else of the z-scores); with ``m``,
    fused order within the dense top ``m`` (questions only) and dense order after it."""
    dense, lexical = (q.dense, q.lexical) if sides is None else sides
    fused = alpha * dense + (1 - alpha) * lexical
    if m is None or not q.question:
        return np.lexsort((q.pids, -fused))
    head = q.dense_order[:m]
    return np.concatenate([head[np.lexsort((q.pids[head], -fused[head]))], q.dense_order[m:]])


def curve(p: Prepared, q: Query, rels: dict[str, int], m: int | None, sides: Sides | None = None) -> np.ndarray:
    """nDCG@10 at every tabulated dense weight: float64 ``(STEPS + 1,)``. The documents are recomputed only where
    the passage order's prefix changes (a prefix holding ``TOP`` documents decides them)."""
    out = np.empty(STEPS + 1)
    prefix: tuple[int, ...] | None = None
    value = 0.0
    for j in range(STEPS + 1):
        order = q.pids[ranking(q, j / STEPS, m, sides)]
        head = tuple(order[:4 * TOP].tolist())
        if head != prefix or len(documents(p, order[:4 * TOP])) < TOP:
            value = ndcg(documents(p, order), rels, TOP)
            prefix = head
        out[j] = value
    return out


@dataclass(frozen=True)
class Candidate:
    """A family of changes: its settings (``None``: as today), each shown in part 2 or not, and what it does."""

    name: str
    settings: Sequence[Any]
    shown: Sequence[Any]
    m: Callable[[Any], int | None] = lambda s: None  # the dense top M the setting restricts BM25 to
    factor: Callable[[Query, Any], float] = lambda q, s: 1.0  # the lexical weight's factor on a question
    # Another normalisation of both sides (``None``: the z-scores), on questions or, with ``every_query``, on all.
    sides: Callable[[Query, Any], Sides] | None = None
    every_query: bool = False

    def acts(self, q: Query) -> bool:
        return q.question or self.every_query


def above(key: str) -> Callable[[Query, float], float]:
    """Shrink the lexical weight in proportion once the evidence ``key`` exceeds the setting: ``t / x``."""
    return lambda q, t: min(1.0, t / q.evidence[key]) if q.evidence[key] > t else 1.0


def cosine_ramp(q: Query, s: tuple[float, float, float]) -> float:
    """``(lo, hi, lift)``: the factor is ``lift`` at a top cosine of ``lo`` or less and falls linearly to 0 (dense
    alone) at ``hi`` or more. ``lift`` 1 only ever shrinks the lexical weight; above 1 it also gives a question
    whose best dense match is weak more lexical weight than today (1.5 at today's question weight 0.9: 0.85)."""
    lo, hi, lift = s
    return lift * min(1.0, max(0.0, (hi - q.evidence["top_cosine"]) / (hi - lo)))


COSINE_LOS, COSINE_HIS = (0.6, 0.65, 0.7, 0.75), (0.8, 0.85, 0.9)
CANDIDATES = (
    Candidate("dense top M", (10, 20, 30), (10, 20, 30), m=lambda s: s),
    Candidate("dense top 1 stands out (sd) above", (1.0, 1.5, 2.0, 2.5, 3.0), (1.5, 2.0),
              factor=above("stand_out_1")),
    Candidate("dense top 3 stand out (sd) above", (0.5, 1.0, 1.5, 2.0), (1.0,), factor=above("stand_out_3")),
    Candidate("BM25's top 3: mean dense rank above", (2, 5, 10, 20, 40), (10,),
              factor=above("bm25_top3_dense_rank")),
    Candidate("content terms above", (3, 4, 5, 6, 8), (4,), factor=above("content_terms")),
    Candidate("top cosine: ramp to dense alone (lo, hi, lift)",
              [(lo, hi, 1.0) for lo, hi in itertools.product(COSINE_LOS, COSINE_HIS)], [(0.75, 0.8, 1.0)],
              factor=cosine_ramp),
    Candidate("top cosine: two-sided ramp (lo, hi, lift)",
              [(lo, hi, lift) for lo, hi, lift in itertools.product(COSINE_LOS[:3], COSINE_HIS, (1.5, 2.0))],
              [(0.7, 0.8, 1.5)], factor=cosine_ramp),
)



def robust(x: np.ndarray) -> np.ndarray:
    """``(x - median) / (1.4826 * MAD)``, the z-score's robust counterpart (the z-score where the MAD is 0)."""
    mad = 1.4826 * np.median(np.abs(x - np.median(x)))
    return (x - np.median(x)) / mad if mad > 0 else z(x)


def clipped(q: Query, c: float) -> Sides:
    """The lexical z-scores clipped above at ``c``."""
    return q.dense, np.minimum(q.lexical, c)


def both_clipped(q: Query, c: float) -> Sides:
    """Both sides' z-scores clipped above at ``c``."""
    return np.minimum(q.dense, c), np.minimum(q.lexical, c)


def floored(q: Query, f: float) -> Sides:
    """The lexical z-scores floored at ``f``: below it, BM25 tells candidates no further apart (a negative ``f``:
    BM25 far below the candidates' mean counts no further against a candidate; a positive one: only BM25 well
    above the mean counts at all)."""
    return q.dense, np.maximum(q.lexical, f)


def robust_scale(q: Query, which: str) -> Sides:
    """``which`` is ``"lexical"`` or ``"both"``: that side (those sides) scaled by :func:`robust`."""
    return (robust(q.cos) if which == "both" else q.dense), robust(q.bm25)


def dense_top_z(q: Query, k: int) -> Sides:
    """The lexical side standardised with the mean and sd of BM25 over the dense side's top ``k`` candidates only
    (the candidates whose order fusion mostly decides), applied to every candidate."""
    head = q.bm25[q.dense_order[:k]]
    sd = head.std()
    return q.dense, (q.bm25 - head.mean()) / sd if sd > 0 else np.zeros_like(q.bm25)


CLIPS, FLOORS, TOPS = (1.5, 2.0, 2.5, 3.0, 3.5, 4.0), (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5), (10, 20, 30, 50)
# Other normalisations with the rule's weights as today: questions only, then every query.
NORMALISATIONS = tuple(
    Candidate(f"{name}{' (every query)' if every else ''}", settings, settings, sides=sides, every_query=every)
    for every in (False, True)
    for name, settings, sides in (
        ("lexical z clipped above at", CLIPS, clipped),
        ("both sides' z clipped above at", CLIPS, both_clipped),
        ("lexical z floored at", FLOORS, floored),
        ("robust scale (median, MAD) of", ("lexical", "both"), robust_scale),
        ("lexical z over the dense top k of", TOPS, dense_top_z),
    ))
FAMILIES = {"evidence": CANDIDATES, "normalisation": NORMALISATIONS, "all": CANDIDATES + NORMALISATIONS}


class Collection:
    """One split's queries, their single-retriever and default figures, and their nDCG@10 curves."""

    def __init__(self, p: Prepared) -> None:
        self.prepared = p
        self.qids, self.queries = load(p)
        per = {mode: p.per_query(mode, Fusion()) for mode in ("lexical", "dense", "hybrid")}
        self.lexical, self.dense, self.default = (np.array([per[m][q] for q in self.qids])
                                                  for m in ("lexical", "dense", "hybrid"))
        self.better = self.lexical if self.lexical.mean() > self.dense.mean() else self.dense
        self._curves: dict[tuple[Any, ...], np.ndarray] = {}
        # The rule's dense weight of every query at every setting of fusion_loco's grid: (settings, queries).
        self.rules = [Fusion(alpha_question=a, alpha_statement=s, lexical_spread=t)
                      for a, s, t in itertools.product(QUESTION, STATEMENT, SPREAD)]
        self.alphas = np.array([[adaptive_alpha(p.runs[qid].candidates, f) for qid in self.qids]
                                for f in self.rules])

    def curves(self, m: int | None, cand: Candidate | None = None, setting: Any = None) -> np.ndarray:
        """float64 ``(queries, STEPS + 1)``; with a candidate that normalises otherwise, its normalisation at
        ``setting`` on the queries it acts on (the others' rows are the z-scores' own)."""
        renorm = cand is not None and cand.sides is not None and setting is not None
        key = (m, cand.name, setting) if renorm else (m,)
        if key not in self._curves:
            rels = self.prepared.data.qrels
            base = self.curves(m) if renorm else None
            self._curves[key] = np.stack([
                base[i] if base is not None and not cand.acts(q) else
                curve(self.prepared, q, dict(rels[qid]), m, cand.sides(q, setting) if renorm else None)
                for i, (qid, q) in enumerate(zip(self.qids, self.queries, strict=True))])
        return self._curves[key]

    def scores(self, alphas: np.ndarray, m: int | None, cand: Candidate | None = None,
               setting: Any = None) -> np.ndarray:
        """Per-query nDCG@10 at per-query dense weights ``alphas`` (float ``(..., queries)``)."""
        idx = np.clip(np.rint(alphas * STEPS).astype(np.int64), 0, STEPS)
        return self.curves(m, cand, setting)[np.arange(len(self.qids)), idx]

    def factors(self, cand: Candidate, setting: Any) -> np.ndarray:
        return np.array([cand.factor(q, setting) if cand.acts(q) else 1.0 for q in self.queries])

    def variant(self, cand: Candidate, setting: Any, rule: int) -> np.ndarray:
        """Per-query nDCG@10 of ``cand`` at ``setting`` (``None``: today's rule) on top of rule setting ``rule``."""
        alpha = self.alphas[rule]
        if setting is None:
            return self.scores(alpha, None)
        return self.scores(1 - (1 - alpha) * self.factors(cand, setting), cand.m(setting), cand, setting)


def margins(values: np.ndarray, col: Collection) -> tuple[float, float]:
    diff = values - col.better
    return float(diff.mean()), float(lower_margin(diff[None, :])[0])


def placement(col: Collection) -> dict[str, Any]:
    """Where the default's top 10 documents of the questions sit in the dense document ranking of the candidates:
    ``{bin: [documents, relevant]}``."""
    p, rels = col.prepared, col.prepared.data.qrels
    bins = {"1-10": [0, 0], "11-20": [0, 0], "21-30": [0, 0], "31-": [0, 0]}
    default_rule = col.rules.index(Fusion())
    for i, (qid, q) in enumerate(zip(col.qids, col.queries, strict=True)):
        if not q.question:
            continue
        dense_docs = documents_all(p, q.pids[q.dense_order])
        for doc in documents(p, q.pids[ranking(q, col.alphas[default_rule, i], None)]):
            r = dense_docs[doc]
            key = "1-10" if r < 10 else "11-20" if r < 20 else "21-30" if r < 30 else "31-"
            bins[key][0] += 1
            bins[key][1] += int(rels[qid].get(doc, 0) > 0)
    return bins


def by_cosine(col: Collection) -> dict[str, Any]:
    """The questions in thirds by their dense top cosine: each third's cosine range and the mean nDCG@10 gain of
    convex z-score fusion at ``THIRDS_WEIGHT`` over dense alone; and the median top cosine of all questions and
    of those whose dense top document has over ``LONG`` words."""
    rows = np.array([i for i, q in enumerate(col.queries) if q.question], dtype=np.int64)
    if not len(rows):
        return {}
    cosine = np.array([col.queries[i].evidence["top_cosine"] for i in rows])
    gain = col.curves(None)[rows, round(THIRDS_WEIGHT * STEPS)] - col.dense[rows]
    cuts = np.quantile(cosine, [1 / 3, 2 / 3])
    third = np.digitize(cosine, cuts, right=True)
    text = getattr(col.prepared.data, "document_text", None)
    long = np.array([text is not None and len(text(col.prepared.doc_of[int(q.pids[q.dense_order[0]])]).split()) > LONG
                     for q in (col.queries[i] for i in rows)])
    return {"cuts": cuts.tolist(), "gain": [float(gain[third == t].mean()) for t in range(3)],
            "median_cosine": float(np.median(cosine)),
            "median_cosine_long": float(np.median(cosine[long])) if long.any() else None, "long": int(long.sum()),
            "at_least_0.8": float((cosine >= 0.8).mean())}


Z_BANDS = (1.0, 2.0, 3.0)  # the lexical z-score bands the documents BM25 brings in are counted in


def lexical_tail(col: Collection) -> dict[str, Any]:
    """How heavy BM25's upper tail is over the questions' candidates and what the tail brings: the share of
    questions whose best lexical z-score is 3 or more, the median skewness of BM25 over the candidates, the
    default's top 10 documents the dense side ranks below 10 by the lexical z-score of the passage that brought
    each in (``Z_BANDS``: ``[documents, relevant]`` per band), and the relevant documents of the dense top 10 that
    the default drops, with the median lexical z-score of their best dense passage."""
    p, rels = col.prepared, col.prepared.data.qrels
    rows = [i for i, q in enumerate(col.queries) if q.question]
    if not rows:
        return {}
    default_rule = col.rules.index(Fusion())
    bands = [[0, 0] for _ in range(len(Z_BANDS) + 1)]
    dropped: list[float] = []
    for i in rows:
        q, judged = col.queries[i], rels[col.qids[i]]
        order = ranking(q, col.alphas[default_rule, i], None)
        dense_docs = documents_all(p, q.pids[q.dense_order])
        fused_top = documents(p, q.pids[order])
        for doc, z_lex in first_passage(p, q, order).items():
            if doc in fused_top and dense_docs[doc] >= TOP:
                band = bands[int(np.searchsorted(Z_BANDS, z_lex, side="right"))]
                band[0] += 1
                band[1] += int(judged.get(doc, 0) > 0)
        by_dense = first_passage(p, q, q.dense_order)
        dropped += [by_dense[d] for d in documents(p, q.pids[q.dense_order])
                    if judged.get(d, 0) > 0 and d not in fused_top]
    skews = [float(np.mean(col.queries[i].lexical ** 3)) for i in rows]
    return {"max_z_3": float(np.mean([col.queries[i].lexical.max() >= 3 for i in rows])),
            "skew": float(np.median(skews)), "bands": bands, "dropped": len(dropped),
            "dropped_z": float(np.median(dropped)) if dropped else None}


def first_passage(p: Prepared, q: Query, order: np.ndarray) -> dict[str, float]:
    """Each document's lexical z-score at its first passage in candidate order ``order``."""
    out: dict[str, float] = {}
    for row in order:
        doc = p.doc_of.get(int(q.pids[row]))
        if doc is not None and doc not in out:
            out[doc] = float(q.lexical[row])
    return out


def documents_all(p: Prepared, pids: np.ndarray) -> dict[str, int]:
    """0-based rank of every document in a passage ranking."""
    out: dict[str, int] = {}
    for pid in pids:
        doc = p.doc_of.get(int(pid))
        if doc is not None and doc not in out:
            out[doc] = len(out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default=SETS_OPTION)
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--family", choices=FAMILIES, default="evidence",
                    help="the per-query evidence for a smaller lexical weight, other normalisations, or both")
    args = ap.parse_args()
    families = FAMILIES[args.family]
    cols = {f"{name} {split}": Collection(prepare(DATA / name, split, IndexConfig(precision=args.precision),
                                                  progress=lambda m: print(m, file=sys.stderr)))
            for name, split in parse_sets(args.sets)}
    default_rule = next(iter(cols.values())).rules.index(Fusion())
    for name, col in cols.items():  # the tabulated curves reproduce the default exactly
        if not np.array_equal(col.variant(CANDIDATES[0], None, default_rule), col.default):
            raise SystemExit(f"{name}: the tabulated curves do not reproduce the default's nDCG@10")
    out: dict[str, Any] = {"placement": {n: placement(c) for n, c in cols.items()},
                           "by_cosine": {n: by_cosine(c) for n, c in cols.items()},
                           "lexical_tail": {n: lexical_tail(c) for n, c in cols.items()}, "wins_losses": {},
                           "per_collection": {}, "loco": {}}
    for n, c in cols.items():
        rows = {"default": c.default}
        rows.update({f"dense top {m}": c.variant(CANDIDATES[0], m, default_rule) for m in CANDIDATES[0].shown})
        out["wins_losses"][n] = {k: {"won": int((v > c.dense).sum()), "lost": int((v < c.dense).sum()),
                                     "gained": float((v - c.dense).clip(min=0).sum()),
                                     "given_up": float((c.dense - v).clip(min=0).sum())} for k, v in rows.items()}
    for cand in (None, *families):
        shown = [None] if cand is None else list(cand.shown)
        for s in shown:
            label = "default" if cand is None else f"{cand.name} {s}"
            row = {}
            for n, c in cols.items():
                v = c.default if cand is None else c.variant(cand, s, default_rule)
                mean, lo = margins(v, c)
                change = paired_bootstrap(v - c.default)
                row[n] = {"ndcg": float(v.mean()), "change": change[0], "change_ci95": list(change[1:]),
                          "margin": mean, "lower": lo}
            out["per_collection"][label] = row
    for cand in (None, *families):
        label = "the rule alone (fusion_loco)" if cand is None else cand.name
        settings = [None] + ([] if cand is None else list(cand.settings))
        out["loco"][label] = loco(cols, cand or CANDIDATES[0], settings)
    if args.json:
        print_json(out)
        return
    report(out, list(cols))


def loco(cols: dict[str, Collection], cand: Candidate, settings: Sequence[Any]) -> dict[str, Any]:
    """Each collection held out: the (rule, setting) pair with the largest worst lower-bound margin on the others,
    scored on it."""
    pairs = list(itertools.product(range(len(next(iter(cols.values())).rules)), settings))
    values = {n: [c.variant(cand, s, r) for r, s in pairs] for n, c in cols.items()}
    lower = {n: lower_margin(np.stack(v) - cols[n].better[None, :]) for n, v in values.items()}
    out = {}
    for held in cols:
        worst = np.min([lower[n] for n in cols if n != held], axis=0)
        best = int(np.argmax(worst))
        rule, setting = pairs[best]
        f = cols[held].rules[rule]
        v = values[held][best]
        mean, lo, hi = paired_bootstrap(v - cols[held].better)
        out[held] = {"rule": [f.alpha_question, f.alpha_statement, f.lexical_spread], "setting": setting,
                     "value": float(v.mean()), "margin": mean, "ci95": [lo, hi]}
    return out


def report(out: dict[str, Any], names: list[str]) -> None:
    print(markdown_table(
        ["questions of", "default top 10 from dense 1-10", "11-20", "21-30", "31-"],
        [[n] + [f"{d} ({r / d:.0%} relevant)" if d else "0" for d, r in out["placement"][n].values()]
         for n in names if any(d for d, _ in out["placement"][n].values())]))
    print()
    print(markdown_table(
        ["questions of", "top cosine thirds cut at", f"gain at {THIRDS_WEIGHT:g} over dense: low / mid / high third",
         "median top cosine", f"... of a top document over {LONG} words", "share at 0.8 or more"],
        [[n, ", ".join(f"{c:.3f}" for c in b["cuts"]), " / ".join(f"{g:+.3f}" for g in b["gain"]),
          f"{b['median_cosine']:.3f}", "-" if b["median_cosine_long"] is None else
          f"{b['median_cosine_long']:.3f} ({b['long']})", f"{b['at_least_0.8']:.0%}"]
         for n, b in out["by_cosine"].items() if b]))
    print()
    bands = ["below 1", *(f"{a:g}-{b:g}" for a, b in itertools.pairwise(Z_BANDS)), f"{Z_BANDS[-1]:g} and more"]
    print(markdown_table(
        ["questions of", "best lexical z 3 or more", "median BM25 skewness",
         *(f"brought in from below dense 10, lexical z {b}" for b in bands), "relevant dense top 10 dropped"],
        [[n, f"{t['max_z_3']:.0%}", f"{t['skew']:.2f}", *(f"{d} ({r / d:.0%} relevant)" if d else "0"
                                                          for d, r in t["bands"]),
          f"{t['dropped']}" + ("" if t["dropped_z"] is None else f" (median lexical z {t['dropped_z']:+.2f})")]
         for n, t in out["lexical_tail"].items() if t]))
    print()
    print(markdown_table(
        ["against dense alone", *names],
        [[k] + [f"{w[k]['won']} won +{w[k]['gained']:.2f}, {w[k]['lost']} lost -{w[k]['given_up']:.2f}"
                for w in (out["wins_losses"][n] for n in names)]
         for k in next(iter(out["wins_losses"].values()))]))
    print()
    print(markdown_table(
        ["candidate (rule at default)", *names],
        [[label] + [f"{r[n]['ndcg']:.3f} ({r[n]['change']:+.3f}) {r[n]['margin']:+.3f} / {r[n]['lower']:+.3f}"
                    for n in names] for label, r in out["per_collection"].items()]))
    print()
    for label, folds in out["loco"].items():
        worst = min(f["margin"] for f in folds.values())
        print(f"LOCO, {label}: worst held-out margin {worst:+.3f}")
        print(markdown_table(
            ["held out", "rule (q, s, spread)", "setting", "hybrid", "margin (95% CI)"],
            [[n, ", ".join(f"{x:g}" for x in f["rule"]), "as today" if f["setting"] is None else f["setting"],
              f"{f['value']:.3f}", interval(f)] for n, f in folds.items()]))
        print()


if __name__ == "__main__":
    main()
