"""Request and response bodies of the HTTP API (they make the served OpenAPI schema)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator
from pydantic_core import PydanticCustomError
from typing_extensions import TypedDict  # pydantic needs it below Python 3.12 (and depends on it)

from searchapp.errors import ConfigError
from searchapp.filters import FIELDS, MAX_LENGTH, STRING_FIELDS
from searchapp.query.fusion import SETTINGS
from searchapp.query.options import OPTIONS, check, check_queries, flatten
from searchapp.reports import CollectionListing, DocumentListing
from searchapp.setting import DEFAULT_CONTEXT_CHARS, MAX_CONTEXT_CHARS, Setting
from searchapp.types import EXACT, MAX_WHOLE, Hit, TextForm

# Bounds a single request may ask for: one request must not be able to hold the server for minutes (MAX_K, the
# most hits and the deepest offset, is the settings': setting.py).
MAX_QUERY_CHARS = 10_000  # of a query, and of the ``q`` whose words a document or context highlights
MAX_QUERIES = 256
# Queries x k of one batch: 256 x 1000 hits made a 194 MB answer. 10 x 1000 or 256 x 39 still fit.
MAX_HITS = 10_000
MAX_DOCUMENTS = 1000
MAX_INPUTS = 2048  # OpenAI's own limit on embedding inputs per request
# Tokens of one embeddings request, all inputs together: 2048 long inputs took the encoder for 30 s.
MAX_EMBEDDING_TOKENS = 65_536
# Characters of a document's text in one answer (GET /documents/{id}); a longer text is read in windows.
DEFAULT_DOCUMENT_CHARS = 200_000
MAX_DOCUMENT_CHARS = 1_000_000


class _Strict(BaseModel):
    # Unknown fields refused, and every value of its JSON type: `"offset": true` or `"min_score": "0.5"` is a
    # mistake in the client, not a number (a whole number still fills a float field).
    model_config = ConfigDict(extra="forbid", strict=True)


def _field(s: Setting, default: Any, kind: Any = None) -> tuple[Any, Any]:
    """A request field of setting ``s``: its type (``kind``, else its valid names where it has them, else its
    declared type), ``default``, its bounds (``per_request`` the upper one where it has one) and its
    description."""
    if kind is None:
        kind = Literal[s.names()] if s.choices else s.kind
    if default is None:
        kind = kind | None
    doc = s.text(s.doc) if s.doc is not None else None
    return kind, Field(default=default, ge=s.ge, le=s.request_upper(), description=doc)


def _fusion_overrides() -> type[BaseModel]:
    """Per-request hybrid settings, one optional field per fusion setting (query/fusion.py)."""
    spec = {name: _field(s, None) for name, s in SETTINGS.items()}
    return create_model(  # type: ignore[call-overload, no-any-return]
        "FusionOverrides", __base__=_Strict, __doc__="Per-request hybrid settings; omitted ones keep the index's "
        "(see docs/evaluation.md).", **spec
    )


FusionOverrides = _fusion_overrides()


def _filters() -> type[BaseModel]:
    """A filter's JSON form, one field per condition of :class:`~searchapp.filters.Filter`: its metadata an
    object, each path condition a string, each with its bound (``filters.MAX_LENGTH``). What the schema cannot
    say (the values' bounds, Unicode text) the search options check with the library (``_Options``)."""
    spec = {name: (str | None, Field(default=None, max_length=MAX_LENGTH[name])) if name in STRING_FIELDS
            else (dict[str, Any], Field(default_factory=dict, max_length=MAX_LENGTH[name])) for name in FIELDS}
    return create_model(  # type: ignore[call-overload, no-any-return]
        "Filters", __base__=_Strict, __doc__="Only documents meeting all conditions: metadata key -> value or list "
        "of values (any of them), path or\ntext id prefix, glob over the full path or text id, named collection.",
        **spec
    )


Filters = _filters()


# The HTTP form of the options whose Python type is not plain JSON.
_TYPES: dict[str, Any] = {"filters": Filters}


def library_check(fn: Callable[[], Any]) -> None:
    """``fn()``, its ``ConfigError`` a validation error carrying the library's message (HTTP 422, a tool error):
    a request's values checked by the library's one rule before the request runs."""
    try:
        fn()
    except ConfigError as exc:
        raise PydanticCustomError("invalid_value", "{message}", {"message": str(exc)}) from None


class _Options(_Strict):
    def search_kwargs(self) -> dict[str, Any]:
        """The request's options as the keyword arguments of ``Index.search_batch``."""
        return flatten(self.model_dump())

    @model_validator(mode="after")
    def _filter_checked(self) -> _Options:
        filters = getattr(self, "filters", None)
        library_check(lambda: check("filters", None if filters is None else filters.model_dump()))
        return self


def text_field(default: TextForm) -> Any:
    """The request field naming the one text each hit carries (:data:`~searchapp.types.TextForm`), ``default``
    unless asked."""
    return Field(default=default, description="The one text each hit carries (its text_form): exact (the "
                 "document's text[start:end], markup blanked to spaces: start and end index it) or clean (blanks "
                 "collapsed, include directives' lines dropped: for a prompt).")


def _search_options() -> type[_Options]:
    """What a search asks beside its queries: one field per search option (query/options.py) with its default,
    choices, bounds (``per_request`` the upper one where it has one) and description, the filters as
    :class:`Filters`, and the fusion overrides nested under ``fusion`` (after the filters, where they have always
    been)."""
    spec: dict[str, Any] = {}
    for name, opt in OPTIONS.items():
        spec[name] = _field(opt, opt.default, _TYPES.get(name))
        if name == "filters":
            spec["fusion"] = (FusionOverrides | None, None)  # type: ignore[valid-type]
    spec["text"] = (TextForm, text_field(EXACT))  # not a search option: which text the answer's hits carry
    return create_model(  # type: ignore[call-overload, no-any-return]
        "SearchOptions", __base__=_Options, __doc__="What a search asks beside its queries (``/search`` and "
        "``/search/batch`` alike).", **spec
    )


SearchOptions = _search_options()


class SearchRequest(SearchOptions):  # type: ignore[misc, valid-type]
    query: str = Field(max_length=MAX_QUERY_CHARS)

    @model_validator(mode="after")
    def _unicode(self) -> SearchRequest:
        library_check(lambda: check_queries([self.query]))
        return self


def _search_params() -> type[BaseModel]:
    """``GET /search``'s query parameters: ``q``, each search option that is one value (query/options.py, with
    its bounds), and each of a filter's path and collection conditions flat (``filters.STRING_FIELDS``); metadata
    filters and fusion overrides are POST's."""
    spec: dict[str, Any] = {"q": (str, Field(max_length=MAX_QUERY_CHARS, description="The query."))}
    for name, opt in OPTIONS.items():
        if name != "filters":
            spec[name] = _field(opt, opt.default)
    for name in STRING_FIELDS:
        spec[name] = (str | None, Field(default=None, max_length=MAX_LENGTH[name]))
    spec["text"] = (TextForm, text_field(EXACT))
    return create_model(  # type: ignore[call-overload, no-any-return]
        "SearchParams", __config__=ConfigDict(extra="forbid"), __doc__="GET /search's query parameters.", **spec)


SearchParams = _search_params()


def search_request(params: BaseModel) -> SearchRequest:
    """The POST body a ``GET /search`` stands for: one request, checked by the same rules."""
    values = params.model_dump()
    filters = {name: value for name in STRING_FIELDS if (value := values.pop(name)) is not None}
    return SearchRequest.model_validate({"query": values.pop("q"), **values, "filters": filters or None})


class BatchSearchRequest(SearchOptions):  # type: ignore[misc, valid-type]
    queries: list[str] = Field(min_length=1, max_length=MAX_QUERIES)

    @model_validator(mode="after")
    def _bounded(self) -> BatchSearchRequest:
        library_check(lambda: check_queries(self.queries))
        hits = len(self.queries) * (self.k + self.offset)
        if hits > MAX_HITS:
            raise PydanticCustomError(
                "too_many_hits", "{n} queries x k {k} = {hits} hits, over the limit of {limit} per request: send "
                "fewer queries or a smaller k", {"n": len(self.queries), "k": self.k, "hits": hits, "limit": MAX_HITS},
            )
        return self


def _hit_json() -> type:
    """A hit's JSON form (:meth:`Hit.to_dict <searchapp.types.Hit.to_dict>`): the fields of :class:`Hit` with their
    types, all always given, but one text, the form asked, and that form as ``text_form`` (no ``clean_text``). A
    ``TypedDict``: validating and writing a thousand hits costs 7 ms, as the dataclass did; as a model, 16 ms."""
    hints = get_type_hints(Hit)
    spec: dict[str, Any] = {}
    for f in dataclasses.fields(Hit):
        if f.name != "clean_text":
            spec[f.name] = hints[f.name]
        if f.name == "text":
            spec["text_form"] = TextForm
    hit = TypedDict("Hit", spec)  # type: ignore[misc]
    hit.__doc__ = ("One ranked search result, as ``searchapp query --json`` prints it (docs/cli.md).\n\n``text`` is "
                   "the passage in the form ``text_form`` names (the request's ``text``): ``exact``, the document's "
                   "``text[start:end]`` with markup blanked to spaces, or ``clean``, the same for a prompt (blanks "
                   "collapsed, include directives' lines dropped; ``start``/``end`` do not index it).")
    return hit


HitJson = _hit_json()


class SearchResponse(BaseModel):
    """One query's hits, as ``searchapp query --json`` prints them."""

    query: str
    mode: str
    hits: list[HitJson]  # type: ignore[valid-type]


class BatchSearchResponse(BaseModel):
    results: list[SearchResponse]


class DocumentIn(_Strict):
    id: str | None = Field(default=None, min_length=1, max_length=1024, description="Default: content hash.")
    text: str = Field(min_length=1)
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class DocumentsRequest(_Strict):
    documents: list[DocumentIn] = Field(min_length=1, max_length=MAX_DOCUMENTS)


class DocumentsResponse(BaseModel):
    ids: list[str]
    added: int
    updated: int
    unchanged: int
    passages_embedded: int


class DeleteResponse(BaseModel):
    id: str
    deleted: bool


class EmbeddingsRequest(BaseModel):
    """OpenAI's embeddings request. Token-id inputs are refused: they are another tokenizer's ids."""

    input: str | list[str] | list[int] | list[list[int]]
    model: str
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = None
    user: str | None = None


class Embedding(BaseModel):
    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | str


class Usage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class EmbeddingsResponse(BaseModel):
    object: Literal["list"] = "list"
    data: list[Embedding]
    model: str
    usage: Usage


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "searchapp"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class _DocumentFields(BaseModel):
    path: str = Field(description="The file's absolute path, or the id of a text added through the API.")
    title: str
    source: Literal["file", "text"]
    metadata: dict[str, Any]
    n_chars: int = Field(description="Length of the document's text, in characters (code points).")


HIGHLIGHTS = (
    "Only with q: the words of the returned text that match the query, as a hit's snippet highlights them: [s, e) "
    "in document offsets, in text order (a word cut by the window's edge is left out)."
)


HIGHLIGHT_QUERY = "A query whose words the answer's highlights mark, found as a hit's snippet finds them."


# A passage's place as line:column (lines.py), as a hit's (types.Hit).
LINE = "Line where the passage starts, from 1 (a line ends at \\n, \\r\\n or \\r); null where not recorded."
COLUMN = "Column where the passage starts, from 1, in characters; null where not recorded."
END_LINE = "Line of the passage's end (just past its last character); null where not recorded."
END_COLUMN = "Column of the passage's end (just past its last character), in characters; null where not recorded."
PAGE = "The page (from 1) a passage of a paged format (PDF) starts on; null for other formats or where not recorded."
SOURCE_LINES = ("Where the passage's text's lines are not its file's (HTML): [offset into text, the file's line from "
                "there on] pairs, the first at offset 0; line and end_line are then the file's. Null otherwise.")


class DocumentWindow(BaseModel):
    """Which part of a document's text to read (``GET /documents/{id}``'s query parameters)."""

    start: int = Field(default=0, ge=0, le=MAX_WHOLE, description="First character of the window.")
    max_chars: int = Field(default=DEFAULT_DOCUMENT_CHARS, ge=1, le=MAX_DOCUMENT_CHARS)
    q: str | None = Field(default=None, max_length=MAX_QUERY_CHARS, description=HIGHLIGHT_QUERY)


class ContextWindow(BaseModel):
    """How much of a passage's surroundings to read (``GET /passages/{id}/context``'s query parameters)."""

    chars: int = Field(default=DEFAULT_CONTEXT_CHARS, ge=0, le=MAX_CONTEXT_CHARS,
                       description="Characters of the document's text on each side of the passage.")
    q: str | None = Field(default=None, max_length=MAX_QUERY_CHARS, description=HIGHLIGHT_QUERY)


class PassageSpan(BaseModel):
    passage_id: int
    start: int
    end: int


class DocumentTextResponse(_DocumentFields):
    """Characters ``[start, end)`` of a document's text, rebuilt from its stored passages: the full text is not
    stored, and the whitespace between passages is shown as spaces ending in a line break (offsets are exact)."""

    start: int
    end: int
    truncated: bool = Field(description="Whether text lies outside [start, end): ask again with another start.")
    text: str
    passages: list[PassageSpan] = Field(description="The passages that overlap the window, in text order.")
    highlights: tuple[tuple[int, int], ...] = Field(default=(), description=HIGHLIGHTS)


class PassageContextResponse(_DocumentFields):
    """A passage (``text``, at ``[start, end)`` of its document) with the document's text before and after it."""

    passage_id: int
    start: int
    end: int
    line: int | None = Field(default=None, description=LINE)
    column: int | None = Field(default=None, description=COLUMN)
    end_line: int | None = Field(default=None, description=END_LINE)
    end_column: int | None = Field(default=None, description=END_COLUMN)
    page: int | None = Field(default=None, description=PAGE)
    source_lines: list[tuple[int, int]] | None = Field(default=None, description=SOURCE_LINES)
    before: str
    text: str
    after: str
    highlights: tuple[tuple[int, int], ...] = Field(default=(), description=HIGHLIGHTS)


MAX_DOCUMENT_PAGE = 1000


class DocumentPageParams(BaseModel):
    """``GET /documents``' query parameters: a page of the listing, of one collection where one is named."""

    model_config = ConfigDict(extra="forbid")
    offset: int = Field(default=0, ge=0, le=MAX_WHOLE, description="Documents to skip, by path.")
    limit: int = Field(default=100, ge=1, le=MAX_DOCUMENT_PAGE, description="The most documents in the page.")
    collection: str | None = Field(default=None, max_length=MAX_LENGTH["collection"],
                                   description="Only this named collection's documents.")


class DocumentPage(BaseModel):
    """A page of ``searchapp documents --json``: ``next_offset`` asks for the next page (``None`` on the last)."""

    documents: list[DocumentListing]
    offset: int
    next_offset: int | None


class CollectionList(BaseModel):
    """The index's named collections (``searchapp collections --json``)."""

    collections: list[CollectionListing] = Field(description="By name: each with its description (\"\" where none "
                                                 "was given), documents and passages. Search one with "
                                                 "filters.collection.")
