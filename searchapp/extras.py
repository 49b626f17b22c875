"""The optional extras (pyproject.toml's ``[project.optional-dependencies]``) and the one message a missing one
gives: what needs it, which module is missing, and the install command that fits how this searchapp was installed.

A released install (a wheel from an index or a file) is told ``PYTHON -m pip install 'searchapp[server]'``; an
editable install of a checkout (``pip install -e .``, what ``scripts/setup.sh`` makes) is told ``PYTHON -m pip
install -e '/path/to/checkout[server]'``, since the released name would install a second searchapp over the
checkout. ``PYTHON`` is the interpreter running searchapp, so the extra lands in its environment. How it
was installed is read from the installed distribution's ``direct_url.json`` (PEP 610), which pip writes.
"""

from __future__ import annotations

import json
import shlex
import sys
from urllib.parse import unquote, urlparse

from searchapp.errors import ConfigError

DISTRIBUTION = "searchapp"


def install_command(extra: str) -> str:
    """The pip command that adds ``extra`` to this install, run by this interpreter (``PYTHON -m pip``): a bare
    ``pip`` is whichever comes first on the PATH, often not the environment searchapp runs in."""
    python = shlex.quote(sys.executable or "python3")
    checkout = _editable_checkout()
    if checkout is not None:
        return f"{python} -m pip install -e '{checkout}[{extra}]'"
    return f"{python} -m pip install '{DISTRIBUTION}[{extra}]'"


def missing(extra: str, what: str, exc: ImportError) -> ConfigError:
    """The error for ``what`` (a command or a feature) that needs ``extra``, whose import failed with ``exc``:
    one line naming the missing module and the command that installs it."""
    name = exc.name or str(exc)
    return ConfigError(f"{what} needs the {extra} extra ({name} is missing): {install_command(extra)}")


def _editable_checkout() -> str | None:
    """The folder of the checkout this searchapp is an editable install of, or None (released, or not installed:
    run from a source tree on the path)."""
    from importlib import metadata  # here: importing it costs every command ~8 ms, and few need it

    try:
        raw = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not raw:
        return None
    try:
        info = json.loads(raw)
    except ValueError:
        return None
    if not (isinstance(info, dict) and isinstance(info.get("dir_info"), dict) and info["dir_info"].get("editable")):
        return None
    url = urlparse(str(info.get("url", "")))
    return unquote(url.path) if url.scheme == "file" and url.path else None
