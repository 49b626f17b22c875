"""The SQLite library searchapp connects through (``searchapp/sqlite_driver.py``): pysqlite3's where installed, the
standard library's otherwise or with ``SEARCHAPP_SQLITE=stdlib``, and an index written through either is read
through the other with the same results (a user who installs or drops pysqlite3, or copies an index to a
machine without it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from searchapp import Index, IndexConfig
from searchapp.sqlite_driver import CHOICES, ENV_SWITCH

ROOT = Path(__file__).resolve().parents[2]

# Writes an index with the fake encoder, changes it or only reads it, then prints its library and every mode's
# ranking.
SCRIPT = """
import json, sys
from searchapp import Index, IndexConfig
from searchapp.sqlite_driver import describe
from tests.fakes import FakeEncoder
texts = {texts!r}
with Index(sys.argv[1], create=True, config=IndexConfig(), encoder=FakeEncoder()) as ix:
    if sys.argv[2] == "write":
        ix.add_texts(texts[:-1], ids=[f"t{{i}}" for i in range(len(texts) - 1)])
    elif sys.argv[2] == "change":  # a writer adds one more and removes one
        ix.add_texts(texts[-1:], ids=["last"])
        ix.remove(["t0"])
    facts = ix.stats().to_dict()  # what `status` shows of the library: the one in use
    assert (facts["sqlite_library"], facts["sqlite_version"]) == tuple(describe().split())
    out = {{"library": facts["sqlite_library"]}}
    for mode in ("lexical", "dense", "hybrid"):
        out[mode] = [[h.path, round(h.score, 6)] for h in ix.search("signing keys rotate garden", k=10, mode=mode)]
    print(json.dumps(out))
"""

TEXTS = [
    "Rotate the signing keys with the rotate command every quarter.",
    "Signing keys expire after a year unless rotated.",
    "The database stores passages and vectors on disk.",
    "Keys to the garden shed hang by the door.",
    "Tomatoes want water twice a week in summer; the garden needs keys too.",
    "A passage in the last file, written by the other library: rotate the keys.",
]


def _run(index: Path, library: str, step: str) -> dict[str, object]:
    env = {**os.environ, ENV_SWITCH: library, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(texts=TEXTS), str(index), step], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_auto_prefers_pysqlite3_and_stdlib_is_the_standard_module() -> None:
    pytest.importorskip("pysqlite3")
    probe = "from searchapp.sqlite_driver import dbapi; print(dbapi().__name__)"
    names = {}
    for library in CHOICES:
        env = {**os.environ, ENV_SWITCH: library}
        names[library] = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                                        timeout=60, check=True).stdout.strip()
    assert names == {"auto": "pysqlite3.dbapi2", "stdlib": "sqlite3"}


def test_an_unknown_library_is_a_one_line_error(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.add_texts(TEXTS, ids=[str(i) for i in range(len(TEXTS))])
    env = {**os.environ, ENV_SWITCH: "sqlite4"}
    out = subprocess.run([sys.executable, "-m", "searchapp", "query", "keys", "--mode", "lexical",
                          "--index", str(tmp_path / "ix")],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert out.stderr.strip().splitlines() == [f"error: {ENV_SWITCH}='sqlite4': expected one of auto, stdlib"]


@pytest.mark.parametrize(("first", "second"), [("stdlib", "auto"), ("auto", "stdlib")])
def test_an_index_written_through_one_library_is_read_and_written_through_the_other(
    tmp_path: Path, first: str, second: str
) -> None:
    pytest.importorskip("pysqlite3")
    a, b = tmp_path / "a", tmp_path / "b"
    wrote = _run(a, first, "write")
    read = _run(a, second, "read")
    assert {wrote["library"], read["library"]} == {"pysqlite3", "sqlite3"}
    assert {k: v for k, v in read.items() if k != "library"} == {k: v for k, v in wrote.items() if k != "library"}
    # Changed through the other library, the index ranks as one written through a single library does.
    mixed = _run(a, second, "change")
    _run(b, second, "write")
    single = _run(b, second, "change")
    assert mixed == single
    assert all(mixed[mode] for mode in ("lexical", "dense", "hybrid"))


def test_both_libraries_cut_every_character_into_the_same_terms() -> None:
    # An index's terms were written by one library's tokenizer and its queries may be cut by the other's: every
    # code point up to the end of the ideographic planes, inside a word, starting one and alone. In-memory
    # databases only: two libraries must never share a file in one process.
    pysqlite3 = pytest.importorskip("pysqlite3.dbapi2")
    import sqlite3

    from searchapp.analysis import TOKENIZER

    texts = [f"a{chr(cp)}b {chr(cp)}x {chr(cp)}" for cp in range(0x20, 0x30000) if not 0xD800 <= cp < 0xE000]

    def terms(module: object) -> list[tuple[int, str]]:
        conn = module.connect(":memory:")  # type: ignore[attr-defined]
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, content='', tokenize='{TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        conn.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", list(enumerate(texts, 1)))
        out = conn.execute("SELECT doc, term FROM v ORDER BY doc, offset").fetchall()
        conn.close()
        return out

    standard, bundled = terms(sqlite3), terms(pysqlite3)
    assert len(standard) > len(texts)
    assert standard == bundled


def test_a_removed_documents_text_is_not_left_in_the_index_files(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    # Whichever library writes (pysqlite3's leaves freed space as it was unless told): the text is overwritten.
    # The tokenizer cuts the secret into several terms, so the whole string was only ever in the stored text.
    secret = "Passphrase#Orchid#4471-Zeta"
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.add_texts(["keep this passage", f"the vault opens with {secret} at noon"], ids=["keep", "gone"])

    def files() -> bytes:
        return b"".join(p.read_bytes() for p in sorted((tmp_path / "ix").iterdir()) if p.is_file())

    assert secret.encode() in files()
    with Index(tmp_path / "ix", encoder=fake_encoder) as ix:
        assert ix.remove(["gone"]) == 1
    assert secret.encode() not in files()
    with Index(tmp_path / "ix", encoder=fake_encoder) as ix:
        assert [h.path for h in ix.search("passage", mode="lexical")] == ["keep"]
