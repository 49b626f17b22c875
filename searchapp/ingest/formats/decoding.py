"""Text files' bytes to ``str``: the encoding found, binary content refused, line endings normalised.

Every loaded text has its line endings normalised to ``"\\n"``: passage offsets are into that normalised text,
not into the bytes on disk.
"""

from __future__ import annotations

import codecs

from searchapp.errors import LoadError

# What decode_text calls that logs: charset_normalizer, asked for the encoding (Format.loggers).
LOGGERS = ("charset_normalizer",)
# How much of a file is looked at to tell text from binary content.
SNIFF_BYTES = 8192
# C0 controls and DEL, minus the whitespace ones and ESC (ANSI colour codes are common in log files).
_CONTROL_BYTES = bytes([*range(0x00, 0x09), *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])
_MAX_CONTROL_SHARE = 0.10
# UTF-32 first: its little-endian BOM starts with the UTF-16 one. The codecs consume the BOM themselves.
_WIDE_BOMS = {
    "utf-32": (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE),
    "utf-16": (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE),
}
# charset_normalizer's "chaos" scores for short Western European text are nearly tied between cp1252 and
# cp1250/cp1257 and it often picks the wrong one ("très" -> "trčs"); within this margin cp1252 wins.
_CP1252_MARGIN = 0.1


def normalise_newlines(text: str) -> str:
    """``text`` with ``"\\r\\n"`` and ``"\\r"`` turned into ``"\\n"``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def decode_text(data: bytes, path: str) -> str:
    """Decode a text file's bytes to ``str`` with ``"\\r\\n"`` and ``"\\r"`` normalised to ``"\\n"``.

    A UTF-8 BOM is dropped; strict UTF-8 is tried first, then charset_normalizer's guess, then cp1252 with
    replacement characters. Raises :class:`LoadError` for content that looks binary.
    """
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    # UTF-16/32 text is full of NUL bytes, so it must be recognised before the binary check rejects it.
    for encoding, boms in _WIDE_BOMS.items():
        if data.startswith(boms):
            try:
                return normalise_newlines(data.decode(encoding))
            except UnicodeDecodeError:
                break
    sample = data[:SNIFF_BYTES]
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    if b"\x00" in sample or controls > _MAX_CONTROL_SHARE * len(sample):
        raise LoadError(path, "binary content, not text", no_text=True)
    try:
        return normalise_newlines(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    matches = from_bytes(data)
    best = matches.best()
    if best is None:
        return normalise_newlines(data.decode("cp1252", errors="replace"))
    near = (m for m in matches if m.encoding == "cp1252" and m.chaos <= best.chaos + _CP1252_MARGIN)
    return normalise_newlines(str(next(near, best)))
