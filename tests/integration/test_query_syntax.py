"""What docs/cli.md ("Query syntax") says the lexical side does with a query, checked: words only, no operators."""

from __future__ import annotations

from searchapp.analysis import query_terms
from searchapp.store.lexical import match_expression


def ids(ix, query: str) -> set[str]:  # type: ignore[no-untyped-def]
    return {h.path for h in ix.search(query, k=20, mode="lexical")}


def test_documented_query_syntax(small_index) -> None:  # type: ignore[no-untyped-def]
    ix = small_index
    ix.add_texts(["Keys signing happens at the café.", "Send an e-mail about C++ and snake_case names.",
                  "Rotation is not scheduled."], ids=["reversed", "punct", "not"])
    # Quotes make no phrase: each word counts on its own, in any order.
    assert query_terms('"signing keys"') == ["signing", "keys"]
    assert "reversed" in ids(ix, '"signing keys"')
    # `*` is no prefix operator: `rot*` is the word "rot", which matches no "rotate".
    assert query_terms("rot*") == ["rot"] and ids(ix, "rot*") == set()
    # AND and OR are stopwords, dropped; NOT is a word like any other, excluding nothing.
    assert query_terms("keys AND garden OR shed NOT door") == ["keys", "garden", "shed", "not", "door"]
    assert "t4" in ids(ix, "keys NOT garden") and "not" in ids(ix, "keys NOT garden")
    # Punctuation and underscores split words; case is folded; repeated words count once.
    assert query_terms("E-mail C++ snake_case Keys keys") == ["e", "mail", "c", "snake", "case", "keys"]
    assert "punct" in ids(ix, "snake_case")
    # Stemming (Porter, English) and accent folding, on both sides.
    assert {"t0", "t1"} <= ids(ix, "rotating")
    assert "reversed" in ids(ix, "cafe")
    # A query of stopwords only keeps them, rather than matching nothing.
    assert query_terms("how to") == ["how", "to"]
    # Every term is quoted in the FTS5 expression, so nothing in a query is read as FTS5 syntax.
    assert match_expression(["not", 'a"b']) == '"not" OR "a""b"'
