"""What a test of a file that must not load checks of the error: one line, naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchapp.errors import LoadError
from searchapp.ingest.formats.load import load_document


def reason(path: Path) -> str:
    """The reason ``path`` fails to load, after checking the error names it on one line."""
    with pytest.raises(LoadError) as info:
        load_document(path)
    assert info.value.path == str(path)
    assert "\n" not in str(info.value)
    return info.value.reason
