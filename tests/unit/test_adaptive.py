import pytest

from searchapp.query.adaptive import adaptive_alpha, adaptive_choice, is_question, lexical_spread
from searchapp.query.fusion import Fusion, fuse
from searchapp.store.rows import Candidates


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("how do I rotate the signing keys?", True),
        ("What causes severe swelling in the knees", True),
        ("is coffee bad for you", True),
        ("  Why don't planes have parachutes", True),
        ("rotate signing keys", False),
        ("Vitamin D deficiency increases the risk of fractures.", False),
        ("0-dimensional biomaterials show inductive properties.", False),
        ("keys rotation?", True),
        ("", False),
    ],
)
def test_question_form(query: str, expected: bool) -> None:
    assert is_question(query) is expected


def cands(query: str) -> Candidates:
    # Passage 1 is the dense favourite, passage 2 the lexical one, passage 3 is mediocre on both.
    return Candidates(query, {1: 0.80, 2: 0.50, 3: 0.55, 4: 0.30}, {1: 1.0, 2: 12.0, 3: 4.0, 4: 0.0})


def test_questions_lean_on_dense_statements_fuse_evenly() -> None:
    fusion = Fusion(method="adaptive", norm="zscore", alpha_question=0.8, alpha_statement=0.3)
    assert adaptive_alpha(cands("how do I rotate keys?"), fusion) == 0.8
    assert adaptive_alpha(cands("key rotation schedule"), fusion) == 0.3
    assert fuse(cands("how do I rotate keys?"), fusion)[0][0] == 1
    assert fuse(cands("key rotation schedule"), fusion)[0][0] == 2


def test_adaptive_with_equal_weights_is_plain_convex() -> None:
    adaptive = Fusion(method="adaptive", norm="minmax", alpha_question=0.6, alpha_statement=0.6)
    convex = Fusion(method="convex", norm="minmax", alpha=0.6)
    for q in ("what is it?", "it is"):
        assert fuse(cands(q), adaptive) == fuse(cands(q), convex)


def many(query: str, lexical_top: list[float]) -> Candidates:
    """Twelve dense candidates (ids 0-11, best first) and eight lexical-only ones; the dense top ten carry the
    given BM25 scores, the lexical-only ones spread from 0 to 14."""
    dense = {i: 0.9 - 0.01 * i for i in range(12)} | {100 + j: 0.2 for j in range(8)}
    lexical = {i: (lexical_top[i] if i < 10 else 0.0) for i in range(12)} | {100 + j: 2.0 * j for j in range(8)}
    return Candidates(query, dense, lexical)


def test_bm25_that_cannot_tell_the_dense_top_apart_loses_its_weight() -> None:
    fusion = Fusion(alpha_question=0.8, alpha_statement=0.5, lexical_spread=1.0)
    flat = many("rotate signing keys", [5.0] * 10)  # every dense favourite matches the words alike
    assert lexical_spread(flat) == 0.0
    choice = adaptive_choice(flat, fusion)
    assert (choice.question, choice.base, choice.alpha) == (False, 0.5, 1.0)
    varied = many("rotate signing keys", [0.0, 14.0] * 5)
    assert lexical_spread(varied) > 1.0
    assert adaptive_alpha(varied, fusion) == 0.5
    half = many("how do I rotate signing keys", [4.0, 6.0] * 5)
    s = lexical_spread(half)
    assert 0 < s < 1
    assert adaptive_alpha(half, fusion) == pytest.approx(1 - 0.2 * s)
    # 0 turns the evidence off: the weight is the query form's alone.
    assert adaptive_alpha(flat, Fusion(alpha_statement=0.5, lexical_spread=0.0)) == 0.5


def test_flat_bm25_among_the_dense_top_cannot_reorder_it() -> None:
    # A lexical-only candidate with the highest BM25 does not jump over the dense favourites when BM25 gives
    # those favourites all the same score; with the evidence turned off it does.
    cands = many("signing keys", [5.0] * 10)
    cands.lexical[107] = 60.0
    assert [p for p, _ in fuse(cands, Fusion())[:10]] == list(range(10))
    assert 107 in [p for p, _ in fuse(cands, Fusion(lexical_spread=0.0))[:10]]


def test_reason_names_the_form_and_the_evidence() -> None:
    reason = adaptive_choice(many("why is the sky blue", [5.0] * 10), Fusion()).reason()
    assert reason.startswith("question: dense weight 0.8") and "spread" in reason
