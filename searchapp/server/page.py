"""The search page: one HTML file, its script and style sheet, shipped inside the package (``static/``).

Served as they are (but for the settings written into the HTML, below), with a Content-Security-Policy that
lets the page load nothing but this server's own files (no inline script or style, no other origin), so that
untrusted text in the index can never run as code even if it were ever put into the page as HTML (the script
never does: it builds the DOM with ``textContent``).

The values the page needs of the API (its modes, bounds and windows) are the server's own, written into the HTML
as one JSON attribute (``data-settings`` of ``<body>``), so the script mirrors none of them and the page needs no
inline script.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from importlib import resources

from searchapp.display import escapes, layout
from searchapp.query.options import MODES
from searchapp.server.schemas import DEFAULT_DOCUMENT_CHARS, MAX_QUERY_CHARS, SearchRequest
from searchapp.setting import MAX_K

# Route -> (file in static/, media type).
FILES: dict[str, tuple[str, str]] = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/ui/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/ui/app.css": ("app.css", "text/css; charset=utf-8"),
    "/ui/icon.svg": ("icon.svg", "image/svg+xml"),
}

CSP = ("default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'")

HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # Revalidate each time: a server upgraded in place must not leave an old script talking to a new API.
    "Cache-Control": "no-cache",
}


# Where index.html takes the settings.
SLOT = b'<body data-settings="">'


def settings() -> dict[str, object]:
    """What the page must know of the API: the search modes and the default one, the largest ``k`` (the last
    page within reach), the characters of a query and of one window of a document, and how to show untrusted
    text (each character shown as an escape, and those of them that are a passage's layout)."""
    return {
        "modes": list(MODES), "mode": SearchRequest.model_fields["mode"].default, "max_k": MAX_K,
        "max_query_chars": MAX_QUERY_CHARS, "document_chars": DEFAULT_DOCUMENT_CHARS,
        # The CLI's rule for showing untrusted text (searchapp/display.py), which the page applies to every text.
        "escapes": escapes(), "layout": layout(),
    }


def load(values: Mapping[str, object]) -> dict[str, tuple[bytes, str]]:
    """Route -> (content, media type) of every file of the page, read once from the installed package, with
    ``values`` (:func:`settings`) written into the HTML."""
    folder = resources.files("searchapp.server") / "static"
    files = {route: ((folder / name).read_bytes(), media) for route, (name, media) in FILES.items()}
    content, media = files["/"]
    attribute = html.escape(json.dumps(dict(values), separators=(",", ":")), quote=True).encode()
    files["/"] = (content.replace(SLOT, b'<body data-settings="' + attribute + b'">', 1), media)
    return files
