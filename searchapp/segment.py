"""Words of scripts written without spaces (Chinese, Japanese, Thai), cut for the lexical tokenizer.

FTS5's unicode61 tokenizer (``analysis.TOKENIZER``) cuts text at spaces and punctuation only, so a run of Chinese or
Japanese is one token and a word inside it never matches. Before any text reaches the tokenizer (``analysis.py``:
a passage's text and section path as indexed, a query's words, the words a snippet compares), each run of these
scripts is replaced by its overlapping two-character units, space-separated: ``"東京大学"`` -> ``" 東京 京大 大学 "``,
the classic dictionary-free cut of Lucene's CJKAnalyzer. A query's run is cut the same way and its units are
OR-ed like any other terms (as Lucene's query parser does with CJK bigrams), in both engines alike, so a word of
two or more characters is found wherever it stands; a run of one character is its own unit, so a lone character
is found only where it stands alone too.

Thai is cut the same way, by clusters rather than code points: a Thai letter with the combining vowel and tone
marks that follow it (no dictionary: the well-kept Thai word breakers on PyPI ship dictionaries of tens of
megabytes). unicode61 reads those marks (category Mn) as separators, which split Thai words into fragments, so here
each is written as a private-use character (category Co, which unicode61 keeps inside a token): ``ข้าว``
(rice) and ``ขาว`` (white) keep different units.

Text without a character of these scripts is returned as it is (the same string), so what the tokenizer sees of
English and every other spaced script is unchanged. The stored text is never changed: offsets and snippets are
the document's. Linear in the text: one pass of a single-class pattern and one over each run's characters.
"""

from __future__ import annotations

import re
import unicodedata

# Chinese and Japanese: CJK ideographs (and their extensions and compatibility forms), the ideographic iteration
# and closing marks, hiragana, katakana (with its phonetic extensions and half-width forms).
_CJK = ("\u3005-\u3007\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
        "\uff66-\uff9f\U00020000-\U0002fa1f")
_THAI = "\u0e00-\u0e7f"
# Where a Thai combining mark is written for the tokenizer: the private-use character at this offset from it.
_MARK_BASE = 0xE000 - 0x0E00
# The Thai marks as written for the tokenizer (U+0E31 to U+0E4E moved to U+E031 to U+E04E): text already cut
# (a query's unit, analysed again by analysis.stems) is cut the same way again.
_WRITTEN = "\ue031-\ue04e"
# A run of characters of these scripts (a written mark only after a Thai letter or mark, so a private-use
# character elsewhere stays as it is): one class a character, each tried once, so the search never backtracks.
_RUN = re.compile(f"(?:[{_CJK}{_THAI}]|(?<=[{_THAI}{_WRITTEN}])[{_WRITTEN}])+")
_IS_CJK = re.compile(f"[{_CJK}]")


def segmented(text: str) -> bool:
    """Whether ``text`` holds a character of a script written without spaces (what :func:`for_tokenizer` cuts)."""
    return _RUN.search(text) is not None


def units(run: str) -> list[str]:
    """The tokenizer's units of one run of these scripts: its overlapping pairs of letters (of Thai clusters), or
    the one letter of a run that has one; none for a run without a letter (punctuation of these blocks).
    ``"東京大学"`` -> ``["東京", "京大", "大学"]``."""
    out: list[str] = []
    letters: list[str] = []
    for ch in run:
        category = unicodedata.category(ch)
        if category in ("Mn", "Co") and letters and not _IS_CJK.match(letters[-1][0]):
            # A Thai mark joins the cluster of the letter before it (a written one as it is).
            letters[-1] += ch if category == "Co" else chr(ord(ch) + _MARK_BASE)
        elif category[0] in "LN" and (not letters or _same_script(letters[-1][0], ch)):
            letters.append(ch)
        else:
            # Punctuation, a stray mark or a change of script ends a stretch: its units, then a new one.
            out.extend(_pairs(letters))
            letters = [ch] if category[0] in "LN" else []
    out.extend(_pairs(letters))
    return out


def _same_script(a: str, b: str) -> bool:
    """Whether two letters of a run belong to the same script (CJK or Thai): a pair never straddles the two."""
    return (_IS_CJK.match(a) is None) == (_IS_CJK.match(b) is None)


def _pairs(letters: list[str]) -> list[str]:
    """Each two neighbouring letters (clusters) joined; the one letter where there is one."""
    if len(letters) == 1:
        return letters
    return [a + b for a, b in zip(letters, letters[1:], strict=False)]


def for_tokenizer(text: str) -> str:
    """``text`` as the tokenizer is given it: each run of these scripts replaced by its :func:`units`, with a space
    on either side; ``text`` itself (the same string) where it has none."""
    if not segmented(text):
        return text
    return _RUN.sub(lambda m: " " + " ".join(units(m.group())) + " ", text)


def words(text: str, word: re.Pattern[str]) -> list[str]:
    """``text``'s words as ``word`` finds them in what the tokenizer is given (:func:`for_tokenizer`), each unit of
    a run of these scripts one word whole (its Thai marks, private-use characters, are not word characters to a
    regular expression)."""
    if not segmented(text):
        return word.findall(text)
    out: list[str] = []
    at = 0
    for m in _RUN.finditer(text):
        out.extend(word.findall(text, at, m.start()))
        out.extend(units(m.group()))
        at = m.end()
    out.extend(word.findall(text, at))
    return out
