"""The HTTP API with real clients: httpx for search and documents, the official openai client for embeddings."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed: pip install 'searchapp[server]'")
httpx = pytest.importorskip("httpx", reason="httpx (test extra) is not installed")

from searchapp import Index, IndexConfig  # noqa: E402
from searchapp.client import Client  # noqa: E402
from searchapp.errors import ConfigError  # noqa: E402
from searchapp.server.app import create_app  # noqa: E402
from searchapp.setting import MAX_FILTER_KEY_VALUES, MAX_FILTER_KEYS, MAX_GLOB_CHARS  # noqa: E402
from searchapp.types import Hit  # noqa: E402
from tests.server_helpers import free_port, running  # noqa: E402

DOCS = [
    {"id": "k1", "text": "Rotate the signing keys with the rotate command.", "metadata": {"team": "security"}},
    {"id": "k2", "text": "Signing keys expire after a year.", "metadata": {"team": "security"}, "title": "Expiry"},
    {"id": "d1", "text": "The database stores passages and vectors.", "metadata": {"team": "storage"}},
]


@pytest.fixture()
def index(tmp_path: Path, fake_encoder) -> Index:  # type: ignore[no-untyped-def]
    ix = Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder)
    yield ix
    ix.close()


def test_documents_and_search_over_http_match_the_python_api(index: Index) -> None:
    with running(create_app(index)) as url, httpx.Client(base_url=url) as http:
        r = http.post("/documents", json={"documents": DOCS})
        assert r.status_code == 200, r.text
        assert r.json() == {"ids": ["k1", "k2", "d1"], "added": 3, "updated": 0, "unchanged": 0,
                            "passages_embedded": 3}
        for mode in ("hybrid", "dense", "lexical"):
            r = http.post("/search", json={"query": "rotate signing keys", "k": 2, "mode": mode})
            assert r.status_code == 200, r.text
            expected = [h.to_dict() for h in index.search("rotate signing keys", k=2, mode=mode)]
            assert r.json() == {"query": "rotate signing keys", "mode": mode, "hits": expected}
        r = http.post("/search", json={"query": "signing keys database", "filters": {"metadata": {"team": "storage"}}})
        assert [h["path"] for h in r.json()["hits"]] == ["d1"]
        r = http.post("/search/batch", json={"queries": ["expire", "database"], "k": 1, "mode": "lexical"})
        assert [res["hits"][0]["path"] for res in r.json()["results"]] == ["k2", "d1"]
        assert r.json()["results"][0]["hits"][0]["title"] == "Expiry"
        r = http.post("/search", json={"query": "rotate", "fusion": {"method": "rrf", "rrf_k": 10}})
        assert r.status_code == 200 and r.json()["hits"][0]["path"] == "k1"
        assert http.delete("/documents/k1").json() == {"id": "k1", "deleted": True}
        assert http.delete("/documents/k1").status_code == 404
        status = http.get("/status").json()
        assert (status["documents"], status["passages"], status["read_only"]) == (2, 2, False)
        assert "k1" not in {h["path"] for h in http.post("/search", json={"query": "rotate"}).json()["hits"]}


def test_a_writer_cannot_replace_an_ingested_file_with_a_text(tmp_path: Path, index: Index) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    real = str(docs / "keys.md")
    Path(real).write_text("Rotate the signing keys every quarter.\n")
    index.ingest(docs)
    index.add_texts(["Signing keys expire after a year."], ids=["k2"])
    with running(create_app(index)) as url, httpx.Client(base_url=url) as http:
        r = http.delete(f"/documents/{quote(real, safe='')}")
        assert r.status_code == 403, r.text
        assert r.json()["error"]["type"] == "permission_error" and "ingested file" in r.json()["error"]["message"]
        for forged in (real, "/etc/passwd", "C:\\Users\\me\\keys.md"):
            r = http.post("/documents", json={"documents": [{"id": forged, "text": "Forged keys text."}]})
            assert r.status_code == 400 and "absolute file path" in r.json()["error"]["message"], r.text
        hits = http.post("/search", json={"query": "signing keys", "mode": "lexical"}).json()["hits"]
        assert {h["path"]: (h["source"], h["text"]) for h in hits} == {
            real: ("file", "Rotate the signing keys every quarter."),
            "k2": ("text", "Signing keys expire after a year."),
        }
        assert http.delete("/documents/k2").status_code == 200
    assert index.remove([real]) == 1  # the Python API, on the index's own side, still removes files


def test_errors_are_json_with_proper_status_codes(index: Index) -> None:
    with running(create_app(index, max_body=4096)) as url, httpx.Client(base_url=url) as http:
        cases = [
            ({"query": "x", "k": 0}, 422, "k"),
            ({"query": "x", "mode": "fuzzy"}, 422, "mode"),
            ({"query": "x", "colour": "red"}, 422, "colour"),
            ({"query": "x", "filters": {"metadata": {"a b": 1}}}, 422, "filter key"),  # a filter: filters.Filter
        ]
        for body, status, word in cases:
            r = http.post("/search", json=body)
            assert r.status_code == status, (body, r.text)
            assert word in r.json()["error"]["message"]
        r = http.post("/documents", json={"documents": [{"id": "a", "text": "x" * 10_000}]})
        assert r.status_code == 413 and "limit" in r.json()["error"]["message"]

        def chunks():  # no Content-Length: the limit must count what arrives
            for _ in range(10):
                yield b"x" * 1000

        r = http.post("/documents", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413
        assert http.get("/status").json()["documents"] == 0
        schema = http.get("/openapi.json").json()
        assert {"/search", "/search/batch", "/documents", "/status", "/v1/embeddings", "/v1/models"} <= set(
            schema["paths"]
        )


def test_a_filter_or_query_no_store_can_run_is_422_naming_the_field_and_the_bound(index: Index) -> None:
    # Each was HTTP 500 (SQLite's "LIKE or GLOB pattern too complex", "Expression tree is too large", a
    # UnicodeEncodeError; PostgreSQL's "invalid regular expression"), with a 190 KB log line for 5,000 keys.
    index.add_texts([d["text"] for d in DOCS], ids=[d["id"] for d in DOCS], metadatas=[d["metadata"] for d in DOCS])
    # A declared bound, or a string pydantic cannot read (a constrained field's lone surrogate), is pydantic's
    # message; the rest the library's (filters.Filter, query.options.check_queries). (filters, query, message)
    cases = [
        ({"path_glob": "*" + "a" * 50_000}, "keys", f"filters.path_glob: String should have at most {MAX_GLOB_CHARS} "
         "characters"),
        ({"metadata": {f"k{i}": 1 for i in range(5000)}}, "keys", "filters.metadata: Dictionary should have at most "
         f"{MAX_FILTER_KEYS} items"),
        ({"metadata": {"team": list(range(100_000))}}, "keys", f"filter 'team' has 100000 values, over the limit of "
         f"{MAX_FILTER_KEY_VALUES} for one key"),
        ({"path_prefix": "\ud800"}, "keys", "filters.path_prefix: Input should be a valid string, unable to parse"),
        ({"path_glob": "k\udfff*"}, "keys", "filters.path_glob: Input should be a valid string, unable to parse"),
        ({"metadata": {"team": "\udc80"}}, "keys", "filter 'team' value holds U+DC80 at character 0, a lone surrogate"),
        ({"metadata": {"team": ["a", "b\ud800"]}}, "keys", "filter 'team' value holds U+D800 at character 1"),
        ({"metadata": {"n": float("inf")}}, "keys", "filter 'n': inf is not a finite number"),
        (None, "keys \ud800", "query: Input should be a valid string, unable to parse"),
    ]
    with running(create_app(index)) as url, httpx.Client(base_url=url) as http:
        for filters, query, message in cases:
            batch = "query 1 holds U+D800 at character 5, a lone surrogate" if query != "keys" else message
            for path, request, expected in (("/search", {"query": query, "filters": filters}, message),
                                            ("/search/batch", {"queries": ["keys", query], "filters": filters}, batch)):
                # json.dumps writes a lone surrogate as the escape "\ud800", as a client in any language may.
                r = http.post(path, content=json.dumps(request), headers={"content-type": "application/json"})
                assert r.status_code == 422, (path, r.text[:300])
                shown = r.json()["error"]["message"]
                assert shown.startswith(expected) and "\n" not in shown and len(shown) < 200, (path, shown)
        for glob in ("*[z-a]*", "*[[:alpha:]]*", "k["):  # PostgreSQL refused the first two; none of k1 k2 d1 matches
            r = http.post("/search", json={"query": "keys", "mode": "lexical", "filters": {"path_glob": glob}})
            assert r.status_code == 200 and r.json()["hits"] == [], (glob, r.text[:300])
    # The Python client checks them before sending (UTF-8 cannot carry a surrogate, JSON has no infinity): the
    # library's messages, no UnicodeEncodeError or ValueError from the HTTP library.
    with running(create_app(index)) as url, Client(url) as client:
        for filters, query, message in [
            ({"path_glob": "*" + "a" * 50_000}, "keys", f"filters.path_glob is 50001 characters long, over the limit "
             f"of {MAX_GLOB_CHARS}"),
            ({"metadata": {"n": float("inf")}}, "keys", "filter 'n': inf is not a finite number"),
            ({"path_prefix": "\ud800"}, "keys", "filters.path_prefix holds U+D800 at character 0, a lone surrogate"),
            (None, "keys \ud800", "the query holds U+D800 at character 5, a lone surrogate"),
        ]:
            with pytest.raises(ConfigError, match=f"^{re.escape(message)}"):
                client.search(query, filters=filters)
            with pytest.raises(ConfigError, match=f"^{re.escape(message.replace('the query', 'query 1'))}"):
                client.search_batch(["keys", query], filters=filters)
        assert {h.path for h in client.search("keys", mode="lexical", filters={"path_glob": "k[0-9]"})} == {"k1", "k2"}


def test_one_batch_cannot_ask_for_more_than_ten_thousand_hits(index: Index) -> None:
    index.add_texts([d["text"] for d in DOCS], ids=[d["id"] for d in DOCS])
    with running(create_app(index)) as url, httpx.Client(base_url=url) as http:
        r = http.post("/search/batch", json={"queries": ["keys"] * 256, "k": 1000, "mode": "lexical"})
        assert r.status_code == 422, r.status_code
        assert r.json()["error"]["message"] == (
            "256 queries x k 1000 = 256000 hits, over the limit of 10000 per request: send fewer queries or a "
            "smaller k"
        )
        r = http.post("/search/batch", json={"queries": ["keys"] * 10, "k": 1000, "mode": "lexical"})
        assert r.status_code == 200 and len(r.json()["results"]) == 10


class SlowModel:
    """Stands in for the transformer: a token per word plus two special ones, a fixed time per forward pass, and
    a record of whether two passes ever overlapped."""

    num_layers, dimension, max_length = 1, 4, 512
    device, cuda = "cpu", False  # where the model's tensors live, as the real model says

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.tokenizer = self
        self.running = 0
        self.overlapped = False

    def encode_batch(self, texts: list[str], add_special_tokens: bool = True) -> list[SimpleNamespace]:
        return [SimpleNamespace(ids=[0] * (len(t.split()) + 2 * add_special_tokens)) for t in texts]

    def forward(self, texts: list[str], truncate: bool = False, all_layers: bool = True) -> SimpleNamespace:
        import torch

        self.running += 1
        self.overlapped |= self.running > 1
        time.sleep(self.seconds)
        self.running -= 1
        longest = max(len(t.split()) for t in texts) + 2
        hidden = torch.stack([torch.full((longest, 4), float(len(t))) for t in texts])
        return SimpleNamespace(hidden_states=hidden.expand(2 if all_layers else 1, -1, -1, -1),
                               attention_mask=torch.ones(len(texts), longest, dtype=torch.long))


def slow_index(tmp_path: Path, seconds: float) -> tuple[Index, SlowModel]:
    from searchapp.encode.encoder import TorchEncoder

    encoder, model = TorchEncoder(batch_size=8), SlowModel(seconds)
    encoder._model = model  # type: ignore[assignment]
    return Index(tmp_path / "slow", create=True, encoder=encoder), model


def test_a_search_does_not_wait_for_a_bulk_embeddings_request(tmp_path: Path) -> None:
    index, model = slow_index(tmp_path, seconds=0.05)
    index.add_texts([d["text"] for d in DOCS], ids=[d["id"] for d in DOCS])
    bulk = {"model": index.config.model, "input": [f"text number {i}" for i in range(8 * 40)]}  # 40 passes: 2 s
    answers: list[httpx.Response] = []
    with running(create_app(index)) as url, httpx.Client(base_url=url, timeout=60) as http:
        thread = threading.Thread(target=lambda: answers.append(http.post("/v1/embeddings", json=bulk)))
        thread.start()
        time.sleep(0.3)  # the bulk request is encoding
        started = time.monotonic()
        r = http.post("/search", json={"query": "rotate signing keys", "mode": "dense"})
        waited, in_flight = time.monotonic() - started, thread.is_alive()
        thread.join()
    index.close()
    assert r.status_code == 200 and r.json()["hits"]
    assert waited < 1.0, f"the search waited {waited:.2f}s behind the embeddings request"
    assert in_flight, "the bulk request ended before the search: make it longer"
    assert answers[0].status_code == 200 and len(answers[0].json()["data"]) == 8 * 40
    assert not model.overlapped  # still one forward pass at a time


def test_an_embeddings_request_has_a_token_budget(tmp_path: Path) -> None:
    index, _ = slow_index(tmp_path, seconds=0)
    with running(create_app(index)) as url, httpx.Client(base_url=url, timeout=60) as http:
        over = {"model": index.config.model, "input": ["word " * 248] * 300}  # 300 x 250 tokens
        r = http.post("/v1/embeddings", json=over)
        assert r.status_code == 400
        assert r.json()["error"]["message"] == (
            "input: 75000 tokens in all, over the limit of 65536 per request: send fewer or shorter texts"
        )
        within = {"model": index.config.model, "input": ["word " * 248] * 262}  # 65,500 tokens
        assert http.post("/v1/embeddings", json=within).status_code == 200
    index.close()


def test_embedding_inputs_are_held_to_the_index_passage_budget(tmp_path: Path) -> None:
    index, model = slow_index(tmp_path, seconds=0)  # the stand-in model would take 512 tokens
    assert index.config.splitter.max_tokens == 256 < model.max_length
    with running(create_app(index)) as url, httpx.Client(base_url=url) as http:
        body = {"model": index.config.model, "input": ["fits", "word " * 254]}  # 256 tokens with the special ones
        assert http.post("/v1/embeddings", json=body).status_code == 200
        body["input"] = ["fits", "word " * 298]
        r = http.post("/v1/embeddings", json=body)
        assert r.status_code == 400
        assert r.json()["error"]["message"].startswith("input[1]: 300 tokens, over the limit of 256")
    index.close()


def test_a_full_disk_is_507(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    from searchapp.errors import StorageError

    def full(*args: object, **kwargs: object) -> None:
        raise StorageError("index.db: cannot write the index database: database or disk is full")

    monkeypatch.setattr(index, "add_texts", full)
    with running(create_app(index)) as url, httpx.Client(base_url=url) as http:
        r = http.post("/documents", json={"documents": DOCS})
        assert r.status_code == 507 and "disk is full" in r.json()["error"]["message"]


def test_server_side_failures_are_500_json(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    from searchapp.errors import ModelLoadError

    failures = iter([ModelLoadError("model folder missing"), RuntimeError("boom")])

    def broken(*args: object, **kwargs: object) -> None:
        raise next(failures)

    monkeypatch.setattr(index, "search_batch", broken)
    with running(create_app(index)) as url, httpx.Client(base_url=url) as http:
        first = http.post("/search", json={"query": "keys"})
        assert first.status_code == 500 and first.json()["error"]["type"] == "server_error"
        assert "model folder missing" in first.json()["error"]["message"]
        second = http.post("/search", json={"query": "keys"})
        assert second.status_code == 500 and second.json()["error"]["message"] == "internal error: RuntimeError"


def test_api_key_is_required_on_every_request_and_nothing_changes_without_it(index: Index) -> None:
    with running(create_app(index, api_key="s3cret")) as url, httpx.Client(base_url=url) as http:
        for method, path, body in [
            ("POST", "/documents", {"documents": DOCS}),
            ("POST", "/search", {"query": "keys"}),
            ("GET", "/status", None),
            ("GET", "/openapi.json", None),
            ("DELETE", "/documents/k1", None),
        ]:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-API-Key": "s3cre"}):
                r = http.request(method, path, json=body, headers=headers)
                assert r.status_code == 401, (method, path, headers)
                assert r.json()["error"]["code"] == "invalid_api_key"
        assert index.stats().documents == 0
        r = http.post("/documents", json={"documents": DOCS}, headers={"Authorization": "Bearer s3cret"})
        assert r.status_code == 200
        assert http.get("/status", headers={"X-API-Key": "s3cret"}).json()["documents"] == 3


def test_without_a_key_only_loopback_host_names_are_answered(index: Index) -> None:
    # DNS rebinding: a web page's own name, re-pointed at 127.0.0.1, reaches the server with that name as Host.
    port = 8000
    with running(create_app(index)) as url, httpx.Client(base_url=url) as http:
        for host in ("evil.example", f"evil.example:{port}", "localhost.evil.example", "127.0.0.1.nip.io",
                     "10.0.0.1", "[::2]", "0x7f000001", ""):
            r = http.get("/status", headers={"Host": host})
            assert r.status_code == 403, (host, r.text)
            assert r.json()["error"]["type"] == "permission_error" and "Host" in r.json()["error"]["message"]
            assert http.post("/documents", json={"documents": DOCS}, headers={"Host": host}).status_code == 403
        assert index.stats().documents == 0
        for host in ("localhost", f"localhost:{port}", "LOCALHOST.", "127.0.0.1", f"127.0.0.1:{port}", "127.1.2.3",
                     "[::1]", f"[::1]:{port}"):
            assert http.get("/status", headers={"Host": host}).status_code == 200, host
    with running(create_app(index, api_key="k")) as url, httpx.Client(base_url=url) as http:
        r = http.get("/status", headers={"Host": "search.example.com", "Authorization": "Bearer k"})
        assert r.status_code == 200  # with a key, the key is the guard: any name may reach it


def test_read_only_refuses_writes(index: Index) -> None:
    index.add_texts([d["text"] for d in DOCS], ids=[d["id"] for d in DOCS])
    with running(create_app(index, read_only=True)) as url, httpx.Client(base_url=url) as http:
        assert http.post("/documents", json={"documents": [{"text": "new"}]}).status_code == 403
        r = http.delete("/documents/k1")
        assert r.status_code == 403 and "read-only" in r.json()["error"]["message"]
        assert http.post("/search", json={"query": "rotate"}).json()["hits"][0]["path"] == "k1"
        assert http.get("/status").json()["read_only"] is True
    assert index.stats().documents == 3


def test_concurrent_searches_while_documents_are_added(index: Index) -> None:
    index.add_texts(["seed text about keys"], ids=["seed"])
    failures: list[str] = []
    done = threading.Event()
    searches = [0]

    with running(create_app(index)) as url:

        def search_loop() -> None:
            with httpx.Client(base_url=url, timeout=30) as http:
                while not done.is_set():
                    for mode in ("hybrid", "lexical", "dense"):
                        r = http.post("/search", json={"query": "keys rotate batch", "k": 5, "mode": mode})
                        searches[0] += 1
                        if r.status_code != 200 or not r.json()["hits"]:
                            failures.append(f"{r.status_code} {r.text[:200]}")

        threads = [threading.Thread(target=search_loop) for _ in range(4)]
        for t in threads:
            t.start()

        def add_loop(start: int) -> None:
            with httpx.Client(base_url=url, timeout=60) as http:
                for b in range(start, start + 15):
                    docs = [{"id": f"b{b}-{i}", "text": f"batch {b} rotates keys number {i}"} for i in range(20)]
                    r = http.post("/documents", json={"documents": docs})
                    if r.status_code != 200:
                        failures.append(f"add {r.status_code} {r.text[:200]}")

        writers = [threading.Thread(target=add_loop, args=(s,)) for s in (0, 100)]  # two writers take turns
        for w in writers:
            w.start()
        for w in writers:
            w.join()
        done.set()
        for t in threads:
            t.join()
    assert not failures, failures[:3]
    assert searches[0] > 20
    assert index.stats().documents == 1 + 2 * 15 * 20
    assert index.stores.vectors.count == index.stats().passages


def test_serve_command_binds_loopback_and_refuses_a_missing_index_when_read_only(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cli = [sys.executable, "-m", "searchapp"]
    missing = subprocess.run([*cli, "serve", "--index", str(tmp_path / "none"), "--read-only"],
                             capture_output=True, text=True, env=env, timeout=120)
    assert missing.returncode == 2
    assert missing.stderr.strip().startswith("error: no index at") and "Traceback" not in missing.stderr
    port = free_port()
    proc = subprocess.Popen([*cli, "serve", "--index", str(tmp_path / "ix"), "--port", str(port), "--no-ui"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 180  # a new index loads the model first: slow on a busy machine
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/status", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.communicate()[1]
                assert time.monotonic() < deadline, "serve did not start"
                time.sleep(0.2)
        assert r.status_code == 200 and r.json()["documents"] == 0
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 404  # --no-ui: no search page
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_openai_client_embeddings_equal_encoder_output(tmp_path: Path, real_encoder) -> None:  # type: ignore[no-untyped-def]
    openai = pytest.importorskip("openai", reason="the openai client (test extra) is not installed")
    texts = ["How do I rotate the signing keys?", "Bananas are yellow.", "naïve café – 東京"]
    expected = real_encoder.encode(texts)
    with Index(tmp_path / "ix", create=True, encoder=real_encoder) as ix, running(create_app(ix, api_key="k")) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0)
        model = ix.config.model
        assert [m.id for m in client.models.list()] == [model]
        default = client.embeddings.create(model=model, input=texts)  # the client asks for base64
        floats = client.embeddings.create(model=model, input=texts, encoding_format="float")
        for resp in (default, floats):
            got = np.array([d.embedding for d in sorted(resp.data, key=lambda d: d.index)], dtype=np.float32)
            assert got.shape == expected.shape
            np.testing.assert_allclose(got, expected, atol=1e-6)
            assert resp.usage.prompt_tokens == resp.usage.total_tokens == sum(real_encoder.token_counts(texts))
        one = client.embeddings.create(model=model, input=texts[0])
        np.testing.assert_allclose(np.array(one.data[0].embedding), expected[0], atol=1e-6)
        with pytest.raises(openai.NotFoundError):
            client.embeddings.create(model="text-embedding-3-small", input="x")
        with pytest.raises(openai.BadRequestError, match="over the limit of 256"):
            client.embeddings.create(model=model, input="word " * 300)
        with pytest.raises(openai.BadRequestError, match="dimensions"):
            client.embeddings.create(model=model, input="x", dimensions=8)
        with pytest.raises(openai.BadRequestError, match="token ids"):
            client.embeddings.create(model=model, input=[[101, 2054]])
        with pytest.raises(openai.AuthenticationError):
            wrong = openai.OpenAI(base_url=f"{url}/v1", api_key="wrong", max_retries=0)
            wrong.embeddings.create(model=model, input="x")


def test_document_text_and_passage_context_routes(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    from tests.integration.test_document_text import TEXT, open_index

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keys.txt").write_text(TEXT)
    index = open_index(tmp_path, fake_encoder)  # small passages: a passage has text on both sides
    index.ingest(docs)
    index.add_texts([d["text"] for d in DOCS], ids=[d["id"] for d in DOCS], metadatas=[d["metadata"] for d in DOCS])
    real = str((docs / "keys.txt").resolve())
    with running(create_app(index)) as url, httpx.Client(base_url=url) as http:
        r = http.get(f"/documents/{quote(real, safe='')}")
        assert r.status_code == 200, r.text
        assert r.json() == index.document(real).to_dict()
        assert r.json()["text"].split() == TEXT.split() and r.json()["truncated"] is False
        r = http.get("/documents/k1", params={"start": 4, "max_chars": 10}).json()
        assert (r["text"], r["start"], r["end"], r["truncated"], r["metadata"]) == (
            DOCS[0]["text"][4:14], 4, 14, True, {"team": "security"})
        hit = index.search("expired refused", k=1, mode="lexical", filters={"path_prefix": real})[0]
        r = http.get(f"/passages/{hit.passage_id}/context", params={"chars": 20})
        assert r.status_code == 200 and r.json() == index.context(hit.passage_id, chars=20).to_dict()
        assert r.json()["text"] == hit.text and len(r.json()["before"]) == len(r.json()["after"]) == 20
        # Where the passage is as line:column, in hits and in its context: counted in the file's own lines.
        found = http.post("/search", json={"query": "expired refused", "k": 1, "mode": "lexical",
                                           "filters": {"path_prefix": real}}).json()["hits"][0]
        lines = TEXT[: hit.start].split("\n")
        assert (found["line"], found["column"]) == (len(lines), len(lines[-1]) + 1) == (6, 3)
        upto = TEXT[: hit.end].split("\n")
        assert (found["end_line"], found["end_column"]) == (len(upto), len(upto[-1]) + 1) == (9, 42)
        assert {k: r.json()[k] for k in ("line", "column", "end_line", "end_column")} == {
            k: found[k] for k in ("line", "column", "end_line", "end_column")}
        for path, status, word in [
            ("/documents/nope", 404, "no document"),
            ("/passages/999999/context", 404, "no passage"),
            ("/passages/abc/context", 422, "passage_id"),
            ("/documents/k1?max_chars=0", 422, "max_chars"),
            ("/documents/k1?max_chars=1000001", 422, "max_chars"),
            ("/documents/k1?start=-1", 422, "start"),
            (f"/passages/{hit.passage_id}/context?chars=20001", 422, "chars"),
        ]:
            r = http.get(path)
            assert r.status_code == status, (path, r.text)
            assert word in r.json()["error"]["message"], (path, r.text)
        assert r.json()["error"]["type"] == "invalid_request_error"
        assert http.get("/documents/nope").json()["error"]["type"] == "not_found_error"
        paths = http.get("/openapi.json").json()["paths"]
        assert {"/documents/{doc_id}", "/passages/{passage_id}/context"} <= set(paths)
        assert "get" in paths["/documents/{doc_id}"] and "delete" in paths["/documents/{doc_id}"]
    index.close()


def test_document_and_context_highlight_the_query_as_the_snippets_do(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    from tests.integration.test_document_text import TEXT, open_index

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keys.txt").write_text(TEXT)
    index = open_index(tmp_path, fake_encoder)
    index.ingest(docs)
    real = str((docs / "keys.txt").resolve())
    query = "when are rotating keys expired?"

    def words(text: str, start: int, spans: list[list[int]]) -> list[str]:
        return [text[s - start : e - start] for s, e in spans]

    with running(create_app(index)) as url, httpx.Client(base_url=url) as http:
        d = http.get(f"/documents/{quote(real, safe='')}", params={"q": query}).json()
        # Stems as BM25 matches them: "rotating" marks "Rotate" and "rotate", "keys" "keys" and "key", never
        # "keyboard"; the stopwords "when" and "are" mark nothing.
        assert words(d["text"], d["start"], d["highlights"]) == [
            "keys", "Rotate", "keys", "rotate", "key", "Keys", "expire", "Expired", "keys"]
        assert {k: v for k, v in d.items() if k != "highlights"} == index.document(real).to_dict()
        # The same words, at the same offsets, as the hits' snippets mark.
        for hit in index.search(query, k=20, mode="lexical", filters={"path_prefix": real}):
            inside = [h for h in map(tuple, d["highlights"]) if hit.start <= h[0] and h[1] <= hit.end]
            assert inside == list(hit.snippet.highlights), hit.text
        hit = index.search("refused", k=1, mode="lexical", filters={"path_prefix": real})[0]
        c = http.get(f"/passages/{hit.passage_id}/context", params={"chars": 60, "q": query}).json()
        full, first = c["before"] + c["text"] + c["after"], c["start"] - len(c["before"])
        assert words(full, first, c["highlights"]) == ["Keys", "expire", "Expired", "keys"]
        # A window that cuts a word leaves the piece out: "key|s every quarter" shows "key", not the word.
        cut = TEXT.index("keys every") + 3
        w = http.get(f"/documents/{quote(real, safe='')}", params={"q": query, "max_chars": cut}).json()
        assert w["text"].endswith("signing key") and words(w["text"], 0, w["highlights"]) == ["keys", "Rotate"]
        # Without q the answers are as before; an empty q or one of stopwords marks nothing; q is bounded.
        assert "highlights" not in http.get(f"/passages/{hit.passage_id}/context").json()
        assert http.get("/documents/" + quote(real, safe=""), params={"q": ""}).json()["highlights"] == []
        assert http.get(f"/passages/{hit.passage_id}/context", params={"q": "zebra"}).json()["highlights"] == []
        r = http.get(f"/passages/{hit.passage_id}/context", params={"q": "k" * 10_001})
        assert r.status_code == 422 and "q" in r.json()["error"]["message"]
    index.close()


PAGE_FILES = {"/": "text/html", "/ui/app.js": "text/javascript", "/ui/app.css": "text/css",
              "/ui/icon.svg": "image/svg+xml"}


def test_the_page_takes_the_apis_values_from_the_server(index: Index) -> None:
    import html
    import json
    import re

    from searchapp.display import escapes, layout
    from searchapp.server.schemas import DEFAULT_DOCUMENT_CHARS, MAX_QUERY_CHARS
    from searchapp.setting import MAX_K

    with running(create_app(index)) as url, httpx.Client(base_url=url) as http:
        page, script = http.get("/").text, http.get("/ui/app.js").text
    (attribute,) = re.findall(r'<body data-settings="([^"]*)">', page)
    assert json.loads(html.unescape(attribute)) == {
        "modes": ["hybrid", "dense", "lexical"], "mode": "hybrid", "max_k": MAX_K, "max_query_chars": MAX_QUERY_CHARS,
        "document_chars": DEFAULT_DOCUMENT_CHARS, "escapes": escapes(), "layout": layout()}
    # The script mirrors none of them, asks no schema and has no word rules of its own.
    for mirrored in ('"hybrid"', '"lexical"', str(MAX_K), str(DEFAULT_DOCUMENT_CHARS), str(MAX_QUERY_CHARS),
                     "openapi", "STOP"):
        assert mirrored not in script, mirrored


def test_the_search_page_is_served_with_a_strict_content_security_policy(index: Index) -> None:
    index.add_texts([d["text"] for d in DOCS], ids=[d["id"] for d in DOCS])
    with running(create_app(index, api_key="s3cret")) as url, httpx.Client(base_url=url) as http:
        for path, media in PAGE_FILES.items():
            r = http.get(path)  # no key: the page has no data and must load to ask for one
            assert r.status_code == 200 and r.headers["content-type"].startswith(media), path
            assert r.headers["content-security-policy"].startswith("default-src 'self'")
            assert r.headers["x-content-type-options"] == "nosniff"
        page = http.get("/").text
        assert '<meta name="viewport"' in page and 'src="/ui/app.js"' in page
        assert "http://" not in page and "https://" not in page  # nothing fetched from elsewhere
        script = http.get("/ui/app.js").text
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in script, sink
        # Only the page's own files are public, only to GET; every data route still needs the key.
        for method, path in [("GET", "/documents/k1"), ("GET", "/passages/1/context"), ("GET", "/status"),
                             ("POST", "/"), ("GET", "/ui/other.js"), ("GET", "/ui/")]:
            assert http.request(method, path).status_code == 401, (method, path)
        headers = {"Authorization": "Bearer s3cret"}
        assert http.get("/documents/k1", headers=headers).json()["text"] == DOCS[0]["text"]
    with running(create_app(index)) as url, httpx.Client(base_url=url) as http:
        assert http.get("/", headers={"Host": "evil.example"}).status_code == 403  # keyless: loopback names only
        assert http.get("/").status_code == 200
    with running(create_app(index, ui=False)) as url, httpx.Client(base_url=url) as http:
        for path in PAGE_FILES:
            assert http.get(path).status_code == 404, path
        assert http.get("/documents/k1").status_code == 200
    with running(create_app(index, api_key="s3cret", ui=False)) as url, httpx.Client(base_url=url) as http:
        assert http.get("/").status_code == 401  # without the page nothing is public


def test_no_page_of_the_server_loads_code_from_another_origin(index: Index) -> None:
    # FastAPI's /docs and /redoc loaded Swagger UI and ReDoc from a public CDN, unpinned, into this origin.
    from fastapi.routing import APIRoute
    from starlette.routing import Route

    from searchapp.server.page import CSP

    app = create_app(index)
    inner = app
    while not hasattr(inner, "routes"):  # the guard (and access log) wrap the FastAPI app
        inner = inner.app  # type: ignore[attr-defined]
    paths = [r.path for r in inner.routes if isinstance(r, APIRoute | Route) and "GET" in (r.methods or ())
             and "{" not in r.path]
    assert "/" in paths and "/openapi.json" in paths
    with running(app) as url, httpx.Client(base_url=url) as http:
        for path in [*paths, "/docs", "/redoc", "/docs/oauth2-redirect"]:
            r = http.get(path)
            if "html" in r.headers.get("content-type", ""):
                assert r.headers.get("content-security-policy") == CSP, path
                assert "//" not in "".join(__import__("re").findall(r"(?:src|href)=\"([^\"]*)\"", r.text)), path
        assert http.get("/docs").status_code == 404 and http.get("/redoc").status_code == 404
        assert "/search" in http.get("/openapi.json").json()["paths"]


def test_a_hit_carries_one_text_exact_unless_clean_is_asked(index: Index) -> None:
    # Hits carried both text and clean_text: each passage twice. Now one text, exact unless asked (issue 54).
    text = "Rotate   the signing   keys.\n\n\n{* ../../docs_src/keys.py hl[2] *}\n  Done  .\n"
    clean = "Rotate the signing keys.\n\nDone ."
    with running(create_app(index)) as url, httpx.Client(base_url=url) as http:
        assert http.post("/documents", json={"documents": [{"id": "c1", "text": text}]}).status_code == 200
        ask = {"query": "rotate keys", "mode": "lexical"}
        answers = {
            "POST": [http.post("/search", json=ask), http.post("/search", json={**ask, "text": "exact"}),
                     http.post("/search", json={**ask, "text": "clean"})],
            "GET": [http.get("/search", params={"q": "rotate keys", "mode": "lexical", **form})
                    for form in ({}, {"text": "exact"}, {"text": "clean"})],
            "batch": [http.post("/search/batch", json={"queries": ["keys", "rotate keys"], "mode": "lexical", **form})
                      for form in ({}, {"text": "exact"}, {"text": "clean"})],
        }
        for how, found in answers.items():
            assert all(r.status_code == 200 for r in found), (how, [r.text[:300] for r in found])
            default, exact, cleaned = ([r.json()] if how != "batch" else r.json()["results"] for r in found)
            assert default == exact, how
            for e, c in zip(exact, cleaned, strict=True):
                hit, clean_hit = e["hits"][0], c["hits"][0]
                assert "clean_text" not in hit and "clean_text" not in clean_hit, how
                assert hit["text_form"] == "exact" and hit["text"] == text.strip(), how
                assert text[hit["start"]:hit["end"]] == hit["text"], how
                assert clean_hit["text_form"] == "clean" and clean_hit["text"] == clean, how
                assert {**clean_hit, "text": hit["text"], "text_form": "exact"} == hit, how
        for bad in (http.post("/search", json={**ask, "text": "tidy"}),
                    http.get("/search", params={"q": "keys", "text": "tidy"})):
            assert bad.status_code == 422 and "'exact' or 'clean'" in bad.json()["error"]["message"], bad.text[:300]
    # The Python client's hits hold the exact text (the server's default), and clean_text computed from it.
    with running(create_app(index)) as url, Client(url) as client:
        for hit in [client.search("rotate keys", mode="lexical")[0],
                    client.search_batch(["rotate keys"], mode="lexical")[0][0]]:
            assert (hit.text, hit.clean_text) == (text.strip(), clean)
            assert hit == index.search("rotate keys", mode="lexical")[0]


def test_a_hit_loads_from_its_json_of_now_and_from_an_older_server(index: Index) -> None:
    index.add_texts(["Rotate   the signing   keys.\n\n--8<-- \"keys.md\"\nDone."], ids=["c1"])
    hit = index.search("rotate keys", mode="lexical")[0]
    assert Hit.from_dict(hit.to_dict()) == hit and Hit.from_dict(hit.to_dict(text="exact")) == hit
    # An older server gave both texts, and no text_form.
    older = {k: v for k, v in hit.to_dict().items() if k != "text_form"}
    assert Hit.from_dict({**older, "clean_text": hit.clean_text}) == hit == Hit.from_dict(older)
    assert hit.clean_text == "Rotate the signing keys.\n\nDone."
    assert Hit.from_dict({**older, "clean_text": "as that server cleaned it"}).clean_text == "as that server cleaned it"
    # A clean text is no passage of the document: its offsets do not index it, nor could it be cleaned again.
    with pytest.raises(ValueError, match="a hit's JSON with a clean text cannot be loaded: ask for the exact text"):
        Hit.from_dict(hit.to_dict(text="clean"))
    with pytest.raises(ConfigError, match="text 'tidy': use exact or clean"):
        hit.to_dict(text="tidy")
    # A newer server's fields are left out, in the hit and in its explanation (a TypeError before 0.2.0).
    explained = index.search("rotate keys", mode="lexical", explain=True)[0]
    newer = explained.to_dict()
    newer = {**newer, "place": "keys.md:3", "explain": {**newer["explain"], "why": "a newer server's"}}
    assert Hit.from_dict(newer) == explained


def test_collections_are_listed_and_searched_apart_over_http(tmp_path: Path, index: Index) -> None:
    docs = tmp_path / "runbooks"
    docs.mkdir()
    (docs / "page.md").write_text("Page the security on-call when signing keys leak.", encoding="utf-8")
    index.ingest(docs, collection="runbooks", description="What to do when something breaks")
    index.add_texts([DOCS[0]["text"]], ids=["k1"], metadatas=[{"team": "security"}])
    with running(create_app(index)) as url, httpx.Client(base_url=url) as http:
        assert http.get("/collections").json() == {"collections": [
            {"name": "runbooks", "description": "What to do when something breaks", "documents": 1, "passages": 1}]}
        r = http.post("/search", json={"query": "signing keys", "mode": "lexical",
                                       "filters": {"collection": "runbooks"}})
        assert [h["path"] for h in r.json()["hits"]] == [str((docs / "page.md").resolve())]
        assert len(http.post("/search", json={"query": "signing keys", "mode": "lexical"}).json()["hits"]) == 2
        # The client sends the same filter and lists the same collections; the Python API takes the HTTP form.
        assert Client(url).collections() == index.collections()
        # A collection the index does not hold is an error listing those it holds, not an empty answer.
        with pytest.raises(ConfigError, match="collection 'nothing' is not in this index; its collections: runbooks"):
            Client(url).search("signing keys", mode="lexical", filters={"collection": "nothing"})
        r = http.post("/search", json={"query": "signing keys", "mode": "lexical",
                                       "filters": {"collection": "rnbooks"}})
        assert r.status_code == 400 and "its collections: runbooks" in r.json()["error"]["message"], r.text
    assert [h.path for h in index.search("signing keys", mode="lexical", filters={"collection": "runbooks"})] == [
        str((docs / "page.md").resolve())]


def test_the_curl_test_get_search_get_documents_and_a_405_that_says_what_to_send(tmp_path: Path,
                                                                                  index: Index) -> None:
    # GET /search and GET /documents were 405 with no hint ("Method Not Allowed").
    docs = tmp_path / "runbooks"
    docs.mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (docs / name).write_text(f"# {name}\n\nPage the on-call when signing keys leak ({name}).\n", encoding="utf-8")
    index.ingest(docs, collection="runbooks")
    index.add_texts([DOCS[0]["text"]], ids=["k1"])
    with running(create_app(index)) as url, httpx.Client(base_url=url) as http:
        got = http.get("/search", params={"q": "signing keys", "k": 2, "mode": "lexical", "collection": "runbooks"})
        posted = http.post("/search", json={"query": "signing keys", "k": 2, "mode": "lexical",
                                            "filters": {"collection": "runbooks"}})
        assert got.status_code == 200 and got.json() == posted.json() and len(got.json()["hits"]) == 2
        assert http.get("/search", params={"q": "keys", "k": 0}).status_code == 422
        assert http.get("/search", params={"q": "keys", "filters": "x"}).status_code == 422  # POST's, not GET's
        wrong = http.get("/search", params={"q": "keys", "collection": "runbook"})
        assert wrong.status_code == 400 and "its collections: runbooks" in wrong.json()["error"]["message"]

        first = http.get("/documents", params={"limit": 2}).json()
        assert [Path(d["path"]).name for d in first["documents"]] == ["a.md", "b.md"]
        assert first["documents"][0]["collection"] == "runbooks" and first["next_offset"] == 2
        rest = http.get("/documents", params={"offset": first["next_offset"], "limit": 2}).json()
        assert [d["path"] for d in rest["documents"]][1:] == ["k1"] and rest["next_offset"] is None
        assert rest["documents"][1]["collection"] is None
        only = http.get("/documents", params={"collection": "runbooks"}).json()["documents"]
        assert len(only) == 3 and only == [d.to_dict() for d in index.documents(collection="runbooks")]
        assert http.get("/documents", params={"collection": "nope"}).status_code == 400

        put = http.put("/search", json={})
        assert put.status_code == 405 and put.headers["allow"]
        assert put.json()["error"]["message"] == f"PUT /search is not served: send {put.headers['allow']}"
