import pytest

from searchapp.query.adaptive import adaptive_alpha, is_question
from searchapp.query.fusion import Fusion, fuse
from searchapp.types import Candidates


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
