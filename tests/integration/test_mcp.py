"""`searchapp mcp`: the MCP SDK's own client drives the server over stdio (a subprocess) and streamable HTTP on
loopback (a subprocess, key refused and accepted); the tools' behaviour in-process (the SDK's in-process client,
with the fake encoder, so hybrid search runs without the model)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from searchapp import Index  # noqa: E402
from searchapp.errors import ConfigError  # noqa: E402
from searchapp.query.options import OPTIONS  # noqa: E402
from searchapp.server.mcp_server import MCP_PATH, create_http_app, create_server  # noqa: E402
from searchapp.server.mcp_sessions import SESSIONS_PER_CLIENT  # noqa: E402
from searchapp.server.schemas import MAX_DOCUMENT_CHARS, SearchRequest, SearchResponse  # noqa: E402
from searchapp.setting import MAX_FILTER_KEYS, MAX_GLOB_CHARS, MAX_K  # noqa: E402
from tests.conftest import SMALL_TEXTS  # noqa: E402
from tests.server_helpers import free_port, running  # noqa: E402

READ_TOOLS = ["search", "get_document", "get_passage_context", "list_documents", "list_collections", "index_status"]
HIT_FIELDS = {"path", "title", "section", "start", "end", "score", "snippet", "passage_id", "text"}
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}


def drive(target: Any, session: Callable[[Client], Awaitable[None]], **client: Any) -> None:
    """Connect the SDK's client to ``target`` (a server, stdio parameters or a URL), run ``session`` on it."""

    async def main() -> None:
        async with Client(target, read_timeout_seconds=60, **client) as c:
            await session(c)

    anyio.run(main)


def closed(index: Index) -> str:
    """``index``'s location, closed so that another process opens it."""
    location = str(index.location)
    index.close()
    return location


def test_stdio_subprocess_searches_and_reads_with_tool_errors_for_bad_arguments(small_index) -> None:  # type: ignore[no-untyped-def]
    location = closed(small_index)
    with Index(location, read_only=True) as reader:
        expected = [h.path for h in reader.search("signing keys", mode="lexical", k=2)]
        with pytest.raises(ConfigError) as refused:  # the library's own message, as the CLI prints it
            reader.search("keys", mode="lexical", min_score=0.5)
    command = StdioServerParameters(command=sys.executable, args=["-m", "searchapp", "mcp", "-i", location, "--lazy"],
                                    env=dict(os.environ))

    async def session(c: Client) -> None:
        assert c.server_info is not None and c.server_info.name == "searchapp"
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert list(tools) == READ_TOOLS  # read-only unless --allow-writes
        found = await c.call_tool("search", {"query": "signing keys", "mode": "lexical", "k": 2})
        assert not found.is_error
        hits = found.structured_content["hits"]
        assert [h["path"] for h in hits] == expected and HIT_FIELDS <= set(hits[0])
        doc = await c.call_tool("get_document", {"path": "t3", "max_chars": 8})
        assert not doc.is_error
        assert doc.structured_content["text"] == SMALL_TEXTS[3][:8] and doc.structured_content["truncated"]
        bad = await c.call_tool("search", {"query": "keys", "k": 0})
        assert bad.is_error and bad.content[0].text == "k: Input should be greater than or equal to 1"
        unknown = await c.call_tool("search", {"query": "keys", "colour": "red"})
        assert unknown.is_error and unknown.content[0].text.startswith("colour: Extra inputs are not permitted")
        lexical = await c.call_tool("search", {"query": "keys", "mode": "lexical", "min_score": 0.5})
        assert lexical.is_error and lexical.content[0].text == str(refused.value)
        missing = await c.call_tool("get_document", {"path": "nope"})
        assert missing.is_error and missing.content[0].text == "no document with path or id 'nope'"
        write = await c.call_tool("remove", {"id": "t0"})
        assert write.is_error and "--allow-writes" in write.content[0].text

    drive(command, session)


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    inner = getattr(exc, "exceptions", None)
    return [e for sub in inner for e in leaves(sub)] if inner else [exc]


def wait_for_port(port: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"searchapp mcp exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("searchapp mcp did not listen")


def test_http_subprocess_refuses_a_missing_key_and_serves_with_it(small_index) -> None:  # type: ignore[no-untyped-def]
    from mcp.shared._httpx_utils import create_mcp_http_client

    location, port, key = closed(small_index), free_port(), "k-e-y"
    proc = subprocess.Popen([sys.executable, "-m", "searchapp", "mcp", "-i", location, "--transport", "http",
                             "--port", str(port), "--api-key", key, "--lazy"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, proc)
        url = f"http://127.0.0.1:{port}{MCP_PATH}"
        hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        refused = httpx.post(url, json=hello, headers={"Authorization": "Bearer wrong"})
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
        with pytest.raises(Exception) as keyless:  # noqa: B017 - the SDK's client, in its task groups
            drive(url, lambda c: c.list_tools())
        assert any(isinstance(e, MCPError) for e in leaves(keyless.value))

        async def session(c: Client) -> None:
            assert [t.name for t in (await c.list_tools()).tools] == READ_TOOLS
            found = await c.call_tool("search", {"query": "tomatoes water", "mode": "lexical", "k": 1})
            assert not found.is_error and found.structured_content["hits"][0]["path"] == "t3"

        async def keyed() -> None:
            async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
                from mcp.client.streamable_http import streamable_http_client

                async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as c:
                    await session(c)

        anyio.run(keyed)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_http_without_a_key_answers_loopback_names_only(small_index) -> None:  # type: ignore[no-untyped-def]
    with running(create_http_app(create_server(small_index))) as base:
        hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        rebound = httpx.post(base + MCP_PATH, json=hello, headers={"Host": "attacker.example"})
        assert rebound.status_code == 403 and rebound.json()["error"]["code"] == "invalid_host"

        async def session(c: Client) -> None:
            assert [t.name for t in (await c.list_tools()).tools] == READ_TOOLS

        drive(base + MCP_PATH, session)


def test_tools_share_the_http_api_declarations_and_bounds(small_index) -> None:  # type: ignore[no-untyped-def]
    async def session(c: Client) -> None:
        search = next(t for t in (await c.list_tools()).tools if t.name == "search")
        # The route's request and answer, but for the default of the one text each hit carries (MCP's own: clean
        # for a prompt; the route's exact).
        shared = SearchRequest.model_json_schema()["properties"]
        assert search.input_schema["properties"] == {**shared, "text": {**shared["text"], "default": "clean"}}
        assert shared["text"]["default"] == "exact"
        assert search.output_schema == SearchResponse.model_json_schema()
        assert set(OPTIONS) <= set(search.input_schema["properties"])
        too_many = await c.call_tool("search", {"query": "keys", "k": MAX_K + 1})
        assert too_many.is_error and too_many.content[0].text.startswith("k: ")
        too_long = await c.call_tool("get_document", {"path": "t0", "max_chars": MAX_DOCUMENT_CHARS + 1})
        assert too_long.is_error and too_long.content[0].text.startswith("max_chars: ")
        page = await c.call_tool("list_documents", {"offset": 1, "limit": 2})
        listed = page.structured_content
        assert [d["path"] for d in listed["documents"]] == ["t1", "t2"] and listed["total"] == 5 and listed["truncated"]
        status = await c.call_tool("index_status", {})
        assert status.structured_content["documents"] == 5 and status.structured_content["read_only"]

    drive(create_server(small_index), session)


def test_a_filter_no_store_can_run_is_a_tool_error_naming_the_field_and_the_bound(small_index) -> None:  # type: ignore[no-untyped-def]
    # Each was "internal error: OperationalError" (or UnicodeEncodeError) with the store's traceback in the log.
    refused = [
        ({"path_glob": "*" + "a" * 50_000}, f"filters.path_glob: String should have at most {MAX_GLOB_CHARS} "),
        ({"metadata": {f"k{i}": 1 for i in range(5000)}}, f"filters.metadata: Dictionary should have at most "
         f"{MAX_FILTER_KEYS} items"),
        ({"metadata": {"team": list(range(100_000))}}, "filter 'team' has 100000 values, over the limit of "),
        ({"path_prefix": "t\ud800"}, "filters.path_prefix: Input should be a valid string"),
        ({"metadata": {"team": "\udfff"}}, "filter 'team' value holds U+DFFF at character 0, a lone surrogate"),
    ]

    async def session(c: Client) -> None:
        for filters, message in refused:
            out = await c.call_tool("search", {"query": "keys", "mode": "lexical", "filters": filters})
            assert out.is_error and out.content[0].text.startswith(message), out.content[0].text[:300]
        for glob, found in (("*[z-a]*", set()), ("*[[:alpha:]]*", set()), ("t[0-1]", {"t0", "t1"})):
            out = await c.call_tool("search", {"query": "keys", "mode": "lexical", "filters": {"path_glob": glob}})
            assert not out.is_error and {h["path"] for h in out.structured_content["hits"]} == found, glob

    drive(create_server(small_index), session)


def test_hybrid_search_is_the_python_api_and_writes_need_allowing(small_index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "shed.txt").write_text("The shed key hangs by the door.", encoding="utf-8")
    small_index.ingest(tmp_path / "docs")
    file_path = str((tmp_path / "docs" / "shed.txt").resolve())
    expected = [h.to_dict(text="clean") for h in small_index.search("when do signing keys expire?", k=3,
                                                                     group_by="document")]

    async def session(c: Client) -> None:
        assert [t.name for t in (await c.list_tools()).tools] == [*READ_TOOLS, "add_texts", "remove"]
        found = await c.call_tool("search", {"query": "when do signing keys expire?", "k": 3, "group_by": "document"})
        assert found.structured_content["hits"] == expected
        added = await c.call_tool("add_texts", {"documents": [{"id": "n1", "text": "\n\n  Pruning roses in March."}]})
        assert added.structured_content["added"] == 1
        roses = await c.call_tool("search", {"query": "pruning roses", "mode": "lexical", "k": 1})
        hit = roses.structured_content["hits"][0]
        assert hit["path"] == "n1"
        # The passage's place in the text as line:column (third line, after two spaces), its end just past it.
        assert (hit["line"], hit["column"], hit["end_line"], hit["end_column"]) == (3, 3, 3, 26)
        context = await c.call_tool("get_passage_context", {"passage_id": hit["passage_id"], "q": "roses"})
        assert context.structured_content["text"] == "Pruning roses in March." and context.structured_content[
            "highlights"] == [[12, 17]]
        assert (context.structured_content["line"], context.structured_content["end_column"]) == (3, 26)
        assert (await c.call_tool("remove", {"id": "n1"})).structured_content == {"id": "n1", "deleted": True}
        again = await c.call_tool("remove", {"id": "n1"})
        assert again.is_error and again.content[0].text == "no document with id 'n1'"
        ingested = await c.call_tool("remove", {"id": file_path})
        assert ingested.is_error and "is an ingested file: only texts can be deleted" in ingested.content[0].text

    drive(create_server(small_index, allow_writes=True), session)


def test_cli_refuses_a_bad_transport_and_a_missing_index_in_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from searchapp.cli import app

    runner = CliRunner()
    bad = runner.invoke(app, ["mcp", "-i", str(tmp_path / "ix"), "--transport", "pigeon"])
    assert bad.exit_code == 2 and bad.stderr == "error: unknown transport 'pigeon': use one of stdio, http\n"
    for timeout in ("0", "3601"):  # an idle timeout of none, or past the bound
        bad = runner.invoke(app, ["mcp", "-i", str(tmp_path / "ix"), "--transport", "http", "--idle-timeout", timeout])
        assert bad.exit_code == 2 and "Invalid value for '--idle-timeout'" in bad.stderr
    missing = runner.invoke(app, ["mcp", "-i", str(tmp_path / "none"), "--lazy"])
    assert missing.exit_code == 2 and missing.stderr.startswith("error: ") and missing.stderr.count("\n") == 1
    assert not (tmp_path / "none").exists()  # read-only: nothing created


ACCEPT = {"Accept": "application/json, text/event-stream"}


def peer(address: str) -> httpx.Client:
    """An HTTP client whose connections come from ``address`` (any of 127/8 reaches a server on 127.0.0.1)."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30)


def open_session(http: httpx.Client, url: str) -> str:
    opened = http.post(url, json=INITIALIZE, headers=ACCEPT)
    assert opened.status_code == 200, opened.text
    return opened.headers["mcp-session-id"]


def alive(http: httpx.Client, url: str, session_id: str) -> bool:
    """Whether the server still serves ``session_id`` (a ping answered; 404 once it is closed)."""
    ping = http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                     headers={**ACCEPT, "mcp-session-id": session_id, "mcp-protocol-version": "2025-06-18"})
    assert ping.status_code in (200, 404), ping.text
    return ping.status_code == 200


def test_an_initialize_flood_closes_its_own_idle_sessions_and_a_new_client_is_served(small_index) -> None:  # type: ignore[no-untyped-def]
    # The SDK alone kept 10,000 sessions (400 MB), then refused every new client for 30 minutes. A client (one
    # peer address: every loopback client here) holds SESSIONS_PER_CLIENT, the least recently used idle one
    # closed to make room for the next.
    flood = SESSIONS_PER_CLIENT + 8
    with running(create_http_app(create_server(small_index))) as base, peer("127.0.0.1") as http:
        url = base + MCP_PATH
        sessions = [open_session(http, url) for _ in range(flood)]
        assert [alive(http, url, s) for s in sessions[:8]] == [False] * 8
        assert all(alive(http, url, s) for s in sessions[8:])

        async def session(c: Client) -> None:
            assert [t.name for t in (await c.list_tools()).tools] == READ_TOOLS

        drive(url, session)


def test_sessions_are_bounded_in_all_and_only_busy_ones_make_a_client_wait(small_index) -> None:  # type: ignore[no-untyped-def]
    app = create_http_app(create_server(small_index), sessions_per_client=2, max_sessions=3)
    with running(app) as base, peer("127.0.0.2") as a, peer("127.0.0.3") as b, peer("127.0.0.4") as c:
        url = base + MCP_PATH
        a1, a2, b1 = open_session(a, url), open_session(a, url), open_session(b, url)
        b2 = open_session(b, url)  # the server is full: the least recently used idle session of all goes
        assert [alive(a, url, a1), alive(a, url, a2), alive(b, url, b1), alive(b, url, b2)] == [False, True, True,
                                                                                                 True]
        c1 = open_session(c, url)  # a2 is now the least recently used
        assert not alive(a, url, a2) and alive(c, url, c1)
        # A session with a GET stream open is in use: never closed to make room. With all in use, the client
        # that asks is refused, and only while they are.
        headers = {**ACCEPT, "mcp-protocol-version": "2025-06-18"}
        with b.stream("GET", url, headers={**headers, "mcp-session-id": b1}) as s1, \
                b.stream("GET", url, headers={**headers, "mcp-session-id": b2}) as s2, \
                c.stream("GET", url, headers={**headers, "mcp-session-id": c1}) as s3:
            assert s1.status_code == s2.status_code == s3.status_code == 200
            refused = a.post(url, json=INITIALIZE, headers=ACCEPT)
            assert refused.status_code == 503 and "3 MCP sessions are open, all in use" in refused.json()["error"][
                "message"]
            own = b.post(url, json=INITIALIZE, headers=ACCEPT)
            assert own.status_code == 503 and "this client holds 2 MCP sessions, all in use" in own.json()["error"][
                "message"]
        deadline = time.monotonic() + 30  # the server sees the streams end when it next writes or reads
        while (retried := a.post(url, json=INITIALIZE, headers=ACCEPT)).status_code == 503:
            assert time.monotonic() < deadline, retried.text
            time.sleep(0.2)
        assert retried.status_code == 200


def test_an_idle_session_is_closed_after_the_idle_timeout(small_index) -> None:  # type: ignore[no-untyped-def]
    app = create_http_app(create_server(small_index), idle_timeout=1)
    with running(app) as base, peer("127.0.0.1") as http:
        url = base + MCP_PATH
        kept, left = open_session(http, url), open_session(http, url)
        for _ in range(4):  # a session in use stays open
            time.sleep(0.4)
            assert alive(http, url, kept)
        time.sleep(0.5)
        assert not alive(http, url, left)  # nothing else was asked of the server: its own timer closed it


# Each malformed line, and the answer JSON-RPC 2.0 wants for it: (code, id). A readable id is echoed.
MALFORMED = [
    ("{bad", -32700, None),  # not JSON
    ('{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"x": NaN}}', -32700, None),  # not JSON either
    ("[1, 2]", -32600, None),  # a batch
    ("[]", -32600, None),
    ('"ping"', -32600, None),  # JSON, but no object
    ('{"jsonrpc": "2.0", "id": 3}', -32600, 3),  # no method
    ('{"jsonrpc": "2.0", "params": {}}', -32600, None),
    ('{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": "x"}', -32600, 4),  # params a string
    ('{"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]}', -32600, None),
    ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', -32600, None),  # an object id
    ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": 5, "method": 7}', -32600, 5),
    ('{"jsonrpc": "1.0", "id": 6, "method": "ping"}', -32600, 6),
    # A lone surrogate, as Python's json.dumps writes one: valid JSON to Python, no Unicode text to the SDK.
    (json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                 "params": {"name": "search", "arguments": {"query": "\ud800"}}}), -32600, 7),
    (json.dumps({"jsonrpc": "2.0", "id": "\udfff", "method": "ping"}), -32600, None),
]


def test_stdio_answers_each_malformed_line_with_a_json_rpc_error_and_goes_on(small_index) -> None:  # type: ignore[no-untyped-def]
    location = closed(small_index)
    proc = subprocess.Popen([sys.executable, "-m", "searchapp", "mcp", "-i", location, "--lazy"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            encoding="utf-8")
    answers: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [answers.put(line) for line in proc.stdout], daemon=True).start()  # type: ignore[union-attr]

    def ask(*lines: str, until: int) -> list[dict[str, Any]]:
        """Send ``lines``; the messages read back up to the answer to request ``until``."""
        assert proc.stdin is not None
        proc.stdin.write("".join(line + "\n" for line in lines))
        proc.stdin.flush()
        got = []
        while not got or got[-1].get("id") != until or "result" not in got[-1]:
            got.append(json.loads(answers.get(timeout=60)))
        return got

    try:
        ask(json.dumps(INITIALIZE), '{"jsonrpc": "2.0", "method": "notifications/initialized"}', until=0)
        for n, (line, code, request_id) in enumerate(MALFORMED, start=100):
            got = ask(line, "", json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}), until=n)
            assert [(m["error"]["code"], m["id"]) for m in got[:-1]] == [(code, request_id)], line
            assert got[-1]["result"] == {}  # and the next request is answered
        found = ask(json.dumps({"jsonrpc": "2.0", "id": 200, "method": "tools/call", "params": {
            "name": "search", "arguments": {"query": "tomatoes water", "mode": "lexical", "k": 1}}}), until=200)
        assert found[-1]["result"]["structuredContent"]["hits"][0]["path"] == "t3"
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr.read()  # type: ignore[union-attr]


def test_a_search_tool_hit_carries_one_text_clean_by_default(small_index) -> None:  # type: ignore[no-untyped-def]
    # Hits carried both text and clean_text: an agent paid for each passage twice.
    small_index.add_texts(["Prune   the   roses.\n\n\n\n--8<-- \"roses.md\"\nIn  March."], ids=["r1"])

    async def session(c: Client) -> None:
        hit = (await c.call_tool("search", {"query": "prune roses", "mode": "lexical", "k": 1})).structured_content[
            "hits"][0]
        assert hit["path"] == "r1" and hit["text"] == "Prune the roses.\n\nIn March." and "clean_text" not in hit
        assert hit["text_form"] == "clean"
        exact = (await c.call_tool("search", {"query": "prune roses", "mode": "lexical", "k": 1, "text": "exact"})
                 ).structured_content["hits"][0]
        assert "   " in exact["text"] and "clean_text" not in exact and exact["text_form"] == "exact"
        assert {**hit, "text": exact["text"], "text_form": "exact"} == exact

    drive(create_server(small_index), session)


def test_an_agent_lists_the_collections_and_searches_one(small_index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "garden").mkdir()
    (tmp_path / "garden" / "shed.txt").write_text("The shed keys hang by the door.", encoding="utf-8")
    small_index.ingest(tmp_path / "garden", collection="garden", description="Notes about the garden")

    async def session(c: Client) -> None:
        listed = await c.call_tool("list_collections", {})
        assert listed.structured_content == {"collections": [
            {"name": "garden", "description": "Notes about the garden", "documents": 1, "passages": 1}]}
        found = await c.call_tool("search", {"query": "keys", "mode": "lexical",
                                             "filters": {"collection": "garden"}})
        assert [Path(h["path"]).name for h in found.structured_content["hits"]] == ["shed.txt"]
        # A collection the index does not hold is a tool error listing those it holds (it was no hits).
        wrong = await c.call_tool("search", {"query": "keys", "mode": "lexical", "filters": {"collection": "gardn"}})
        assert wrong.is_error and "its collections: garden" in wrong.content[0].text

    drive(create_server(small_index), session)
