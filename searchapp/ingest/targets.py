"""What removal targets (``searchapp remove``, ``Index.remove_targets``) name among the indexed documents."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from searchapp.ingest.files import is_under
from searchapp.paths import own_path
from searchapp.store.rows import StoredDocument
from searchapp.types import names_no_document


def named(targets: Sequence[str], stored: Mapping[str, StoredDocument]) -> dict[str, int]:
    """The documents of ``stored`` (by key) that ``targets`` name, key -> id: a text id or a file's path exactly,
    and every file indexed under a folder, whether or not the folder still exists (a moved or deleted root, or one
    ingested through a link: both its given and its real path are tried). A link to a file names the document
    indexed under the link's own path, never its target's."""
    doomed: dict[str, int] = {}
    for target in targets:
        if target in stored:
            doomed[target] = stored[target].id
        if names_no_document(target):  # and no path the OS takes
            continue
        given = os.path.abspath(target)
        # The path itself, its folders' links resolved but not its own: a link is not its target.
        own = {given, own_path(given)}
        folders = {given, os.path.realpath(target)}
        for key, doc in stored.items():
            # Under a folder, not the folder: a link's target is not the link (``own`` holds its path).
            if doc.source == "file" and (key in own or any(key != f and is_under(key, f) for f in folders)):
                doomed[key] = doc.id
    return doomed
