"""The one rule for showing untrusted text to a person: which characters are shown as a visible escape rather
than obeyed, for the CLI's lines (``cli/common.say``) and the search page (``server/page.py`` hands the page this
table, and its script applies it to every text it shows).

Obeyed instead of shown: C0 controls (line breaks too: a CLI message is one line), DEL, C1 controls (U+009B is a
CSI of its own), and the bidi marks, embeddings, overrides and isolates that make text read in another order than
it is stored (a file ``invoice\\u202efdp.exe`` shown as "invoiceexe.pdf").
"""

from __future__ import annotations

import re

# Code point ranges (inclusive) shown as escapes.
_RANGES = ((0x00, 0x1F), (0x7F, 0x9F), (0x61C, 0x61C), (0x200E, 0x200F), (0x2028, 0x2029), (0x202A, 0x202E),
           (0x2066, 0x2069))
_UNSAFE = re.compile("[" + "".join(f"\\u{a:04x}-\\u{b:04x}" for a, b in _RANGES) + "]")


def escape(ch: str) -> str:
    """One character's visible form: ``\\xNN`` below U+0100, else ``\\uNNNN``."""
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` safe to show: every control or bidi character as its visible :func:`escape`.

    Passage text, file names and index paths come from files anyone may have written; printed raw, their
    escape sequences would clear the screen, set the window title or write the clipboard (OSC 52), and OSC
    sequences survive piping, which strips only colours; bidi characters would reorder what is read.
    """
    return _UNSAFE.sub(lambda m: escape(m.group()), text)


def escapes() -> dict[str, str]:
    """Every character :func:`printable` escapes -> its visible form (what the search page applies)."""
    return {chr(c): escape(chr(c)) for a, b in _RANGES for c in range(a, b + 1)}


def layout() -> str:
    """The escaped characters that are white space: in a passage's text they are its layout, which the CLI shows
    as one space and the page as white space (line breaks in a document), not as escapes."""
    return "".join(ch for ch in escapes() if ch.isspace())
