"""A password in an index location found and masked, whether or not the location parses as a URL: no message,
log line or ``status`` shows one (``store/locate.display``, the PostgreSQL store's messages)."""

from __future__ import annotations

import re

# A password as a URL's query parameter (libpq reads ``?password=``).
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)


def _password(location: str) -> str | None:
    """The password written in ``location``, as written (``None`` if none), found whether or not the URL parses:
    the user information is all before the last ``@`` ahead of the query, the password what follows its
    first ``:``."""
    _, sep, rest = location.partition("://")
    if not sep:
        return None
    before_query = rest.split("?", 1)[0].split("#", 1)[0]
    user_info, at, _ = before_query.rpartition("@")
    if not at or ":" not in user_info:
        return None
    return user_info.split(":", 1)[1] or None


def hide_password(text: str, location: str) -> str:
    """``text`` (a message, an error's reason) with every occurrence of ``location``'s password replaced by
    ``***``, and any ``password=`` query parameter masked: a password never reaches a message, a log line or
    ``status``, even from a URL that does not parse."""
    password = _password(location)
    if password:
        # Its pieces too: a driver that read the URL otherwise (a raw '@' or '/' in the password) may name a
        # "host" or a "database" made of a part of it.
        pieces = [p for p in re.split(r"[@/]", password) if len(p) >= 3]
        for secret in sorted({password, *pieces}, key=len, reverse=True):
            text = text.replace(secret, "***")
    return _QUERY_PASSWORD.sub(r"\1***", text)
