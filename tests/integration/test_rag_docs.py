"""Runs every Python example of docs/rag.md, in order, in one namespace, against a server on a free port."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "rag.md"
DOC_URL, DOC_KEY = "http://127.0.0.1:8000", "s3cret"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_rag_examples_run(tmp_path: Path, real_encoder, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    for extra in ("fastapi", "openai", "httpx", "langchain_core", "llama_index.core", "haystack"):
        pytest.importorskip(extra, reason=f"{extra} (an optional extra) is not installed")
    from searchapp import Index
    from searchapp.server.app import create_app
    from tests.server_helpers import running

    blocks = python_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 7
    # The server opens the same index folder the examples create; it uses the session's loaded model.
    server_index = Index("rag-index", create=True, encoder=real_encoder)
    namespace: dict[str, object] = {}
    with running(create_app(server_index, api_key="k-test")) as url:
        for n, block in enumerate(blocks):
            code = block.replace(DOC_URL, url).replace(DOC_KEY, "k-test")
            exec(compile(code, f"docs/rag.md block {n + 1}", "exec"), namespace)  # noqa: S102
    server_index.close()
    out = capsys.readouterr().out
    assert "ops/keys#1" in out and "runbook#7" in out
