"""The FastAPI application over one open :class:`~searchapp.index.Index`.

Routes are plain (sync) functions: FastAPI runs them on its thread pool, so a slow embedding never stalls the
event loop, and the index is safe to share between those threads (writers take turns on the index's write lock,
the vector store and the encoder lock themselves).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Annotated, Any, TextIO

from fastapi import FastAPI, HTTPException, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from searchapp import __version__
from searchapp.errors import (
    ConfigError,
    DocumentNotFoundError,
    EncoderMismatchError,
    IndexLockedError,
    IndexNotFoundError,
    ModelLoadError,
    SchemaError,
    SearchappError,
    StorageError,
)
from searchapp.index import Index
from searchapp.ingest.texts import text_id
from searchapp.query.snippets import QueryTerms, highlights
from searchapp.server import embeddings, page
from searchapp.server.access_log import AccessLog
from searchapp.server.guard import Guard, error_body
from searchapp.server.schemas import (
    BatchSearchRequest,
    BatchSearchResponse,
    CollectionList,
    ContextWindow,
    DeleteResponse,
    DocumentPage,
    DocumentPageParams,
    DocumentsRequest,
    DocumentsResponse,
    DocumentTextResponse,
    DocumentWindow,
    EmbeddingsRequest,
    EmbeddingsResponse,
    ModelCard,
    ModelList,
    PassageContextResponse,
    SearchParams,
    SearchRequest,
    SearchResponse,
    search_request,
)
from searchapp.types import MAX_WHOLE

DEFAULT_MAX_BODY = 16 * 1024 * 1024
_STATUS: list[tuple[type[SearchappError], int, str]] = [
    (StorageError, 507, "server_error"),  # a full disk: the index is as before the request
    (ModelLoadError, 500, "server_error"),  # the server's model or index is broken, not the request
    (SchemaError, 500, "server_error"),
    (IndexNotFoundError, 404, "not_found_error"),
    (DocumentNotFoundError, 404, "not_found_error"),
    (IndexLockedError, 409, "conflict_error"),
    (EncoderMismatchError, 409, "conflict_error"),
    (ConfigError, 400, "invalid_request_error"),
    (SearchappError, 400, "invalid_request_error"),
]


def _with_highlights(out: dict[str, Any], q: str | None, text: str, start: int, n_chars: int) -> dict[str, Any]:
    """``out`` with the highlights of ``q``'s words in ``text`` (at ``start`` of its document) when ``q`` was given.
    Without ``q`` the answer is as it was before ``q`` existed: the two routes leave unset fields out."""
    if q is not None:
        out["highlights"] = highlights(QueryTerms(q), text, start, n_chars)
    return out


def read_document(index: Index, doc_id: str, window: DocumentWindow) -> dict[str, Any]:
    """``GET /documents/{doc_id}``'s answer (``DocumentTextResponse``'s fields): the window of a document's text,
    with the highlights of ``window.q``. Raises ``DocumentNotFoundError``."""
    d = index.document(doc_id, start=window.start, max_chars=window.max_chars)
    return _with_highlights(d.to_dict(), window.q, d.text, d.start, d.n_chars)


def read_context(index: Index, passage_id: int, window: ContextWindow) -> dict[str, Any]:
    """``GET /passages/{passage_id}/context``'s answer (``PassageContextResponse``'s fields). Raises
    ``DocumentNotFoundError``."""
    c = index.context(passage_id, chars=window.chars)
    return _with_highlights(c.to_dict(), window.q, c.before + c.text + c.after, c.start - len(c.before), c.n_chars)


def run_search(index: Index, queries: list[str], body: SearchRequest | BatchSearchRequest) -> list[SearchResponse]:
    """Each query's hits with the request's options, each with the one text the request's ``text`` names
    (``POST /search`` and ``/search/batch``, and MCP's search)."""
    results = index.search_batch(queries, **body.search_kwargs())
    return [SearchResponse(query=q, mode=body.mode, hits=[h.to_dict(text=body.text) for h in hits])
            for q, hits in zip(queries, results, strict=True)]


def write_documents(index: Index, body: DocumentsRequest) -> DocumentsResponse:
    """``POST /documents``: the texts added or replaced under their ids (a text's content hash where it has none)."""
    docs = body.documents
    ids = [d.id if d.id is not None else text_id(d.text) for d in docs]
    summary = index.add_texts(
        [d.text for d in docs], ids=ids, metadatas=[d.metadata for d in docs],
        titles=[d.title or i for d, i in zip(docs, ids, strict=True)],
    )
    return DocumentsResponse(
        ids=ids, added=summary.added, updated=summary.updated, unchanged=summary.unchanged,
        passages_embedded=summary.passages_embedded,
    )


def delete_text(index: Index, doc_id: str) -> DeleteResponse:
    """``DELETE /documents/{doc_id}``: a text removed; an ingested file's document is refused (``HTTPException``
    403), an unknown id is ``DocumentNotFoundError``."""
    # Files belong to whoever runs `searchapp ingest`: a writer over HTTP deleting one would leave the index
    # disagreeing with the folder until the next ingest, and the path free for a text to pose as the file.
    if index.remove([doc_id], source="text"):
        return DeleteResponse(id=doc_id, deleted=True)
    if index.stores.document_ids([doc_id], source="file"):
        raise HTTPException(403, f"{doc_id!r} is an ingested file: only texts can be deleted over HTTP; delete "
                            "the file and run `searchapp ingest` on its folder again")
    raise DocumentNotFoundError(f"no document with id {doc_id!r}")


def list_collections(index: Index) -> CollectionList:
    """``GET /collections``: the named collections with their descriptions and counts."""
    return CollectionList(collections=index.collections())


def status_report(index: Index, read_only: bool) -> dict[str, Any]:
    """``GET /status``: what ``searchapp status --json`` prints, and whether this server accepts writes: refused
    by this server, or by where the index is held (a read-only connection, a standby)."""
    stats = index.stats().to_dict()
    return {**stats, "read_only": read_only or bool(stats.get("read_only"))}


def invalid_message(errors: Sequence[Any]) -> str:
    """A request's validation errors (pydantic's ``errors()``) as one line: where the first one is, and what."""
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))


def create_app(
    index: Index, *, api_key: str | None = None, read_only: bool = False, max_body: int = DEFAULT_MAX_BODY,
    ui: bool = True, access_log: bool | TextIO = False,
) -> Guard | AccessLog:
    """The ASGI application serving ``index``; pass it to uvicorn (``searchapp serve`` does). ``ui``: serve the
    search page at ``/`` (server/page.py). ``access_log``: a line per request on stderr (or on the stream given;
    server/access_log.py)."""
    app = FastAPI(
        title="searchapp", version=__version__,
        description="Hybrid (BM25 + BERT-layer embeddings) search over an index, and OpenAI-compatible embeddings.",
        # No /docs or /redoc: FastAPI's pages load Swagger UI and ReDoc from a public CDN, unpinned, into this
        # origin, where they could read and write the index with the page's rights. The schema stays, for any
        # OpenAPI viewer to read.
        docs_url=None, redoc_url=None,
    )
    created = int(time.time())
    model_id = index.config.model

    @app.exception_handler(SearchappError)
    def _library_error(request: Request, exc: SearchappError) -> JSONResponse:
        status, kind = next((s, k) for cls, s, k in _STATUS if isinstance(exc, cls))
        return JSONResponse(error_body(str(exc), kind), status_code=status)

    @app.exception_handler(Exception)
    def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Still JSON in the one error shape, so clients report it; the traceback goes to the server's log.
        return JSONResponse(error_body(f"internal error: {type(exc).__name__}", "server_error"), status_code=500)

    @app.exception_handler(RequestValidationError)
    def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(error_body(invalid_message(exc.errors()), "invalid_request_error"), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = {401: "authentication_error", 403: "permission_error", 404: "not_found_error"}.get(
            exc.status_code, "invalid_request_error"
        )
        message = str(exc.detail)
        if exc.status_code == 405:  # say what to send instead, not just "Method Not Allowed"
            allowed = (exc.headers or {}).get("Allow", "")
            message = f"{request.method} {request.url.path} is not served: send {allowed or 'another method'}"
        return JSONResponse(error_body(message, kind), status_code=exc.status_code, headers=exc.headers)

    def writable() -> None:
        if read_only:
            raise HTTPException(403, "this server is read-only (started with --read-only)")

    @app.post("/search", response_model=SearchResponse, tags=["search"])
    def search(body: SearchRequest) -> SearchResponse:
        """The ``k`` best passages for a query (hits as in ``searchapp query --json``)."""
        return run_search(index, [body.query], body)[0]

    @app.get("/search", response_model=SearchResponse, tags=["search"])
    def search_get(params: Annotated[SearchParams, Query()]) -> SearchResponse:
        """``POST /search`` as query parameters (``curl 'HOST/search?q=...&k=5'``): ``q``, the one-value options
        and the path and collection filters; metadata filters and fusion overrides are POST's."""
        try:
            body = search_request(params)
        except ValidationError as exc:  # the POST body's own checks, answered as a request's are (422)
            raise RequestValidationError(exc.errors()) from None
        return run_search(index, [body.query], body)[0]

    @app.post("/search/batch", response_model=BatchSearchResponse, tags=["search"])
    def search_batch(body: BatchSearchRequest) -> BatchSearchResponse:
        """Several queries, embedded in batches; results in the order of the queries."""
        return BatchSearchResponse(results=run_search(index, body.queries, body))

    @app.post("/documents", response_model=DocumentsResponse, tags=["documents"])
    def add_documents(body: DocumentsRequest) -> DocumentsResponse:
        """Add or replace texts with ids and metadata (an unchanged text is not embedded again)."""
        writable()
        return write_documents(index, body)

    @app.get("/documents", response_model=DocumentPage, tags=["documents"])
    def list_documents(params: Annotated[DocumentPageParams, Query()]) -> DocumentPage:
        """A page of the indexed documents by path (or text id), as ``searchapp documents --json`` lists them,
        with each one's collection; ``next_offset`` asks for the next page."""
        docs = index.documents(params.offset, params.limit + 1, params.collection)
        more = len(docs) > params.limit
        return DocumentPage(documents=docs[: params.limit], offset=params.offset,
                            next_offset=params.offset + params.limit if more else None)

    @app.delete("/documents/{doc_id:path}", response_model=DeleteResponse, tags=["documents"])
    def delete_document(doc_id: str) -> DeleteResponse:
        """Remove a text by its id (an ingested file's document is refused with 403)."""
        writable()
        return delete_text(index, doc_id)

    @app.get("/documents/{doc_id:path}", response_model=DocumentTextResponse, response_model_exclude_unset=True,
             tags=["documents"])
    def get_document(doc_id: str, window: Annotated[DocumentWindow, Query()]) -> dict[str, Any]:
        """A document's text (a file's path or a text's id), from ``start``, at most ``max_chars`` characters,
        rebuilt from its stored passages: the whitespace between passages is shown as a line break."""
        return read_document(index, doc_id, window)

    @app.get("/passages/{passage_id}/context", response_model=PassageContextResponse,
             response_model_exclude_unset=True, tags=["documents"])
    def get_context(
        passage_id: Annotated[int, Path(ge=1, le=MAX_WHOLE, description="A hit's passage_id.")],
        window: Annotated[ContextWindow, Query()],
    ) -> dict[str, Any]:
        """A passage (as in a hit's ``passage_id``) with the text before and after it in its document."""
        return read_context(index, passage_id, window)

    @app.get("/collections", response_model=CollectionList, tags=["index"])
    def collections() -> CollectionList:
        """What ``searchapp collections --json`` prints: each named collection's description and counts."""
        return list_collections(index)

    @app.get("/status", tags=["index"])
    def status() -> dict[str, Any]:
        """What ``searchapp status --json`` prints, and whether this server accepts writes."""
        return status_report(index, read_only)

    @app.post("/v1/embeddings", response_model=EmbeddingsResponse, tags=["openai"])
    def create_embeddings(body: EmbeddingsRequest) -> EmbeddingsResponse:
        """OpenAI-compatible embeddings with the index's encoder (``float`` or little-endian float32 ``base64``)."""
        if body.model != model_id:
            raise HTTPException(404, f"model {body.model!r} not found: this server embeds with {model_id!r}")
        budget = index.config.splitter.max_tokens
        return embeddings.create(index.encoder, body, model_id, budget)  # type: ignore[arg-type]

    @app.get("/v1/models", response_model=ModelList, tags=["openai"])
    def list_models() -> ModelList:
        """The one model this server embeds with."""
        return ModelList(data=[ModelCard(id=model_id, created=created)])

    @app.get("/v1/models/{name:path}", response_model=ModelCard, tags=["openai"])
    def get_model(name: str) -> ModelCard:
        if name != model_id:
            raise HTTPException(404, f"model {name!r} not found")
        return ModelCard(id=model_id, created=created)

    public: frozenset[str] = frozenset()
    if ui:
        files = page.load(page.settings())
        public = frozenset(files)  # the page holds no data and must load to ask for the key: see guard.py

        async def serve_file(request: Request) -> Response:  # no I/O: the files were read above
            content, media = files[request.url.path]
            return Response(content, media_type=media, headers=page.HEADERS)

        for route in files:
            app.add_api_route(route, serve_file, methods=["GET"], include_in_schema=False)

    guarded = Guard(app, api_key, max_body, public=public)
    if access_log is False:
        return guarded
    return AccessLog(guarded, None if access_log is True else access_log)
