"""``Client``: the HTTP API from Python, with the same ``search`` / ``add_texts`` / ``remove`` calls as ``Index``,
so the retriever adapters work against a remote server too. Needs the ``client`` extra (httpx)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from searchapp.errors import ConfigError, IndexLockedError, IndexNotFoundError, SearchappError
from searchapp.ids import check_text_id
from searchapp.query.options import SearchKwargs, check, check_queries, nest
from searchapp.reports import CollectionListing
from searchapp.types import Hit

if TYPE_CHECKING:
    from typing_extensions import Unpack

_ERRORS: dict[int, type[SearchappError]] = {400: ConfigError, 404: IndexNotFoundError, 409: IndexLockedError,
                                            422: ConfigError}


def _checked(queries: Sequence[str], options: Mapping[str, Any]) -> list[str]:
    """``queries`` after the server's checks of the queries and the filter, made before anything is sent: a lone
    surrogate cannot even be sent (UTF-8 cannot carry it), nor an infinite number (JSON has none)."""
    check("filters", options.get("filters"))
    return check_queries(queries)


class Client:
    """A searchapp server at ``base_url`` (``api_key`` sent as a Bearer token). Raises the library's typed errors."""

    def __init__(
        self, base_url: str = "http://127.0.0.1:8000", api_key: str | None = None, timeout: float = 60
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout)

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        try:
            r = self._http.request(method, path, json=body)
        except httpx.HTTPError as exc:
            raise SearchappError(f"{self._http.base_url}: {exc}") from exc
        if r.status_code >= 400:
            try:
                message = r.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = r.text[:200]
            raise _ERRORS.get(r.status_code, SearchappError)(f"HTTP {r.status_code}: {message}")
        return r.json()

    def search(self, query: str, **options: Unpack[SearchKwargs]) -> list[Hit]:
        """As :meth:`searchapp.Index.search`, over HTTP (``filters`` in their JSON form)."""
        # The hits' exact text is the server's default (``text`` left out: a server from before it refuses the
        # field); each Hit computes its clean_text from it, as one from an older server's JSON takes the one given.
        body = {"query": _checked([query], options)[0], **nest(options)}
        return [Hit.from_dict(h) for h in self._call("POST", "/search", body)["hits"]]

    def search_batch(self, queries: Sequence[str], **options: Unpack[SearchKwargs]) -> list[list[Hit]]:
        """As :meth:`searchapp.Index.search_batch`, over HTTP."""
        body = {"queries": _checked(queries, options), **nest(options)}
        return [[Hit.from_dict(h) for h in res["hits"]] for res in self._call("POST", "/search/batch", body)["results"]]

    def add_texts(
        self,
        texts: Sequence[str],
        ids: Sequence[str] | None = None,
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        titles: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """As :meth:`searchapp.Index.add_texts`; returns the server's answer (ids and counts)."""
        docs: list[dict[str, Any]] = []
        for i, text in enumerate(texts):
            doc: dict[str, Any] = {"text": text}
            if ids is not None:
                doc["id"] = check_text_id(ids[i], f"text {i}")  # the server's rule, before anything is sent
            if metadatas is not None:
                doc["metadata"] = dict(metadatas[i])
            if titles is not None:
                doc["title"] = titles[i]
            docs.append(doc)
        return dict(self._call("POST", "/documents", {"documents": docs}))

    def remove(self, ids: Sequence[str]) -> int:
        """As :meth:`searchapp.Index.remove`: how many of ``ids`` were there."""
        removed = 0
        for doc_id in ids:
            try:
                self._call("DELETE", f"/documents/{quote(doc_id, safe='')}")
                removed += 1
            except IndexNotFoundError:
                pass
        return removed

    def collections(self) -> list[CollectionListing]:
        """``GET /collections``: the named collections, as :meth:`searchapp.Index.collections` gives them."""
        return [CollectionListing(**c) for c in self._call("GET", "/collections")["collections"]]

    def status(self) -> dict[str, Any]:
        """``GET /status``."""
        return dict(self._call("GET", "/status"))

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

