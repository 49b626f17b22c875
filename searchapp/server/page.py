"""The search page: one HTML file, its script and style sheet, shipped inside the package (``static/``).

Served as they are, with a Content-Security-Policy that lets the page load nothing but this server's own
files (no inline script or style, no other origin), so that untrusted text in the index can never run as code
even if it were ever put into the page as HTML (the script never does: it builds the DOM with ``textContent``).
"""

from __future__ import annotations

from importlib import resources

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


def load() -> dict[str, tuple[bytes, str]]:
    """Route -> (content, media type) of every file of the page, read once from the installed package."""
    folder = resources.files("searchapp.server") / "static"
    return {route: ((folder / name).read_bytes(), media) for route, (name, media) in FILES.items()}
