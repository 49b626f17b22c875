"""The MCP server over one open :class:`~searchapp.index.Index`: the index as tools for coding and chat agents, on
the official MCP SDK (``mcp``, its low-level ``Server``).

Every tool is one of the HTTP API's routes seen from an agent: its arguments are the route's request model
(``server/schemas.py``, whose search fields come from ``query/options.py``), so the JSON schema an agent is shown
and the validation it meets are the HTTP API's, bounds included (``k`` and ``offset`` at most ``MAX_K``, a
document's window at most ``MAX_DOCUMENT_CHARS``, ...); its answer is the route's response model, and its work the
function the route calls (``server/app.py``). What goes wrong is a tool error (``isError``) carrying the one-line
message the CLI and the HTTP API give, never a protocol error or a traceback, so the agent reads why and can ask
again. Writes (``add_texts``, ``remove``) exist only when the server is started with them allowed.

Over streamable HTTP the app sits behind the HTTP API's own :class:`~searchapp.server.guard.Guard`: the same API
key, and without one the same loopback Host rule; its sessions are bounded per client and in all, and closed when
idle (``server/mcp_sessions.py``). Over stdio every line is answered, a malformed one with a JSON-RPC error
(``server/mcp_stdio.py``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException

from searchapp import __version__
from searchapp.errors import SearchappError
from searchapp.index import Index
from searchapp.reports import DocumentListing
from searchapp.server import schemas
from searchapp.server.app import (
    DEFAULT_MAX_BODY,
    delete_text,
    invalid_message,
    list_collections,
    read_context,
    read_document,
    run_search,
    status_report,
    write_documents,
)
from searchapp.server.guard import Guard
from searchapp.server.mcp_sessions import (
    DEFAULT_IDLE_TIMEOUT_S,
    MAX_SESSIONS,
    SESSIONS_PER_CLIENT,
    SessionLimits,
)
from searchapp.server.schemas import ContextWindow, DocumentWindow
from searchapp.types import CLEAN, TextForm

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"  # where the streamable HTTP transport answers
DEFAULT_LISTED = 100  # documents in one list_documents answer, unless asked
MAX_LISTED = 1000

INSTRUCTIONS = (
    "Semantic search over one searchapp index (a folder of documents, or texts added to it). Use `search` to find "
    "passages (hybrid BM25 + embeddings by default; each hit has the document's path, title, section, the "
    "passage's [start, end) in the document's text, its score and a snippet), then `get_passage_context` for the "
    "text around a hit or `get_document` to read a document in windows. `list_documents`, `list_collections` "
    "(named parts of the index, with what each holds: search one with filters.collection) and `index_status` say "
    "what the index holds."
)


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GetDocument(DocumentWindow, _Arguments):
    """Which document, and which window of its text (GET /documents/{path} of the HTTP API)."""

    path: str = Field(min_length=1, description="The document: a file's path or a text's id, as in a hit's path.")


class GetContext(ContextWindow, _Arguments):
    """Which passage, and how much of its document around it (GET /passages/{id}/context of the HTTP API)."""

    passage_id: int = Field(description="A hit's passage_id.")


class ListDocuments(_Arguments):
    """A page of the listing `searchapp documents` prints."""

    path_prefix: str | None = Field(default=None, description="Only documents whose path or text id starts so.")
    offset: int = Field(default=0, ge=0, description="Skip this many documents first (the next page).")
    limit: int = Field(default=DEFAULT_LISTED, ge=1, le=MAX_LISTED, description="Documents in this answer.")


class DocumentList(BaseModel):
    """A page of the indexed documents."""

    documents: list[DocumentListing] = Field(description="In path order, as `searchapp documents --json` lists "
                                             "them.")
    total: int = Field(description="Documents matching path_prefix, on every page.")
    truncated: bool = Field(description="Whether more lie after this page: ask again with a larger offset.")


class Remove(_Arguments):
    """The text to remove."""

    id: str = Field(min_length=1, description="The id of a text added with add_texts (ingested files are refused).")


class NoArguments(_Arguments):
    """This tool takes no arguments."""


@dataclass(frozen=True)
class McpTool:
    """One tool: its arguments' model (the input schema and the validation), its answer's model (the output
    schema; ``None``: a plain object), and what it does with the index."""

    name: str
    description: str
    arguments: type[BaseModel]
    output: type[BaseModel] | None
    run: Callable[[Index, Any], Any]
    writes: bool = False

    def listing(self) -> types.Tool:
        return types.Tool(
            name=self.name, description=self.description, input_schema=self.arguments.model_json_schema(),
            output_schema=self.output.model_json_schema() if self.output is not None else None,
            annotations=types.ToolAnnotations(read_only_hint=not self.writes, destructive_hint=self.writes,
                                              idempotent_hint=True, open_world_hint=False),
        )


class McpSearch(schemas.SearchRequest):  # type: ignore[misc, valid-type]
    # An agent pays for every character it is handed: each hit carries one text, clean unless exact is asked.
    text: TextForm = schemas.text_field(CLEAN)


def _search(index: Index, args: McpSearch) -> schemas.SearchResponse:
    return run_search(index, [args.query], args)[0]


def _list_documents(index: Index, args: ListDocuments) -> DocumentList:
    docs = [d for d in index.documents() if args.path_prefix is None or d.path.startswith(args.path_prefix)]
    page = docs[args.offset:args.offset + args.limit]
    return DocumentList(documents=page, total=len(docs), truncated=args.offset + len(page) < len(docs))


def _tools(read_only: bool) -> list[McpTool]:
    return [
        McpTool("search", "The k best passages of the index for a query (a question or keywords), as the HTTP API's "
                "POST /search returns them: each hit with its document's path (a file) or id (a text), title, "
                "section, the passage's [start, end) offsets in the document's text, score, text (clean for a prompt "
                "unless text: exact is asked) and snippet.", McpSearch, schemas.SearchResponse, _search),
        McpTool("get_document", "A document's text (a file's path or a text's id), from start, at most max_chars "
                "characters, rebuilt from its stored passages; read a long one in windows (truncated says so).",
                GetDocument, schemas.DocumentTextResponse,
                lambda ix, a: read_document(ix, a.path, DocumentWindow(**a.model_dump(exclude={"path"})))),
        McpTool("get_passage_context", "A passage (a hit's passage_id) with chars characters of its document's text "
                "before and after it.", GetContext, schemas.PassageContextResponse,
                lambda ix, a: read_context(ix, a.passage_id, ContextWindow(**a.model_dump(exclude={"passage_id"})))),
        McpTool("list_documents", "The indexed documents, a page at a time: path (or text id), source, title, "
                "passages, size, modification time and when indexed.", ListDocuments, DocumentList, _list_documents),
        McpTool("list_collections", "The index's named collections (folders ingested under a name), each with its "
                "description (what it holds, when to search it), documents and passages; search one with "
                "filters.collection.", NoArguments, schemas.CollectionList, lambda ix, a: list_collections(ix)),
        McpTool("index_status", "What `searchapp status --json` prints (counts, model, settings, size on disk) and "
                "whether this server accepts writes.", NoArguments, None,
                lambda ix, a: status_report(ix, read_only)),
        McpTool("add_texts", "Add or replace texts with ids, titles and metadata (an unchanged text is not embedded "
                "again).", schemas.DocumentsRequest, schemas.DocumentsResponse, write_documents, writes=True),
        McpTool("remove", "Remove a text added with add_texts, by its id (an ingested file's document is refused: "
                "files belong to `searchapp ingest`).", Remove, schemas.DeleteResponse,
                lambda ix, a: delete_text(ix, a.id), writes=True),
    ]


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def _answer(tool: McpTool, out: Any) -> types.CallToolResult:
    """The tool's answer as structured content and, for clients that read only text, the same JSON as text."""
    if tool.output is not None:
        # As the HTTP API's response model writes it: fields a route leaves unset (highlights without q) left out.
        out = tool.output.model_validate(out).model_dump(mode="json", exclude_unset=True)
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(out, ensure_ascii=False))],
                                structured_content=out)


def create_server(index: Index, *, allow_writes: bool = False) -> Server[Any]:
    """The MCP server (the SDK's low-level ``Server``) whose tools read ``index``, and with ``allow_writes`` also
    write it. Run it over stdio with :func:`run_stdio`, or serve :func:`create_http_app`."""
    tools = {t.name: t for t in _tools(read_only=not allow_writes) if allow_writes or not t.writes}
    listed = [t.listing() for t in tools.values()]

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = tools.get(params.name)
        if tool is None:
            hint = "" if allow_writes else " (writes need --allow-writes)"
            return _error(f"unknown tool {params.name!r}: use one of {', '.join(tools)}{hint}")
        try:
            args = tool.arguments.model_validate(params.arguments or {})
            # The index's calls block (the model, the database): on a worker thread, as the HTTP API's routes run.
            out = await anyio.to_thread.run_sync(tool.run, index, args)
        except ValidationError as exc:
            return _error(invalid_message(exc.errors()))
        except SearchappError as exc:
            return _error(str(exc))
        except HTTPException as exc:  # a route's own refusal (a file's document is not deleted over the API)
            return _error(str(exc.detail))
        except Exception as exc:  # still a tool error the agent can report; the traceback goes to the log
            log.exception("tool %s failed", tool.name)
            return _error(f"internal error: {type(exc).__name__}")
        return _answer(tool, out)

    return Server("searchapp", version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool, get_tool_input_schema=lambda name: next(
                      (t.input_schema for t in listed if t.name == name), None))


async def run_stdio(server: Server[Any]) -> None:
    """Serve one client on stdin/stdout until it closes them (the SDK points stray writes to stdout at stderr);
    every line it sends is answered, a malformed one with a JSON-RPC error (``mcp_stdio.py``)."""
    from searchapp.server.mcp_stdio import stdio_streams

    async with stdio_streams() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def create_http_app(server: Server[Any], *, api_key: str | None = None, max_body: int = DEFAULT_MAX_BODY,
                    idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S, sessions_per_client: int = SESSIONS_PER_CLIENT,
                    max_sessions: int = MAX_SESSIONS) -> Guard:
    """The streamable HTTP transport of ``server`` at ``/mcp`` as an ASGI app, behind the HTTP API's guard (the API
    key, or without one loopback Host names only; the body limit), its sessions bounded by ``mcp_sessions.py``:
    at most ``sessions_per_client`` per client and ``max_sessions`` in all (the least recently used idle one is
    closed to make room), each closed after ``idle_timeout`` seconds without a request."""
    # The guard owns the Host rule, as for `searchapp serve` (with a key any name may be served); the SDK's own
    # check would refuse every name but loopback's whatever the key. The SDK's session cap and idle timer stay, set
    # as the ledger's: its cap is never reached while the ledger's holds, and its timer frees an idle session
    # without waiting for the next opening request.
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH, max_request_body_size=max_body,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        session_idle_timeout=idle_timeout, max_sessions=max_sessions,
    )
    limits = SessionLimits(app, MCP_PATH, idle_timeout=idle_timeout, per_client=sessions_per_client,
                           total=max_sessions)
    return Guard(limits, api_key, max_body)
