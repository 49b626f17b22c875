"""``IngestOptions``: an ingest's options, checked once when the value is made (ingest/options.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchapp.errors import ConfigError, SearchappError
from searchapp.ingest.options import MAX_FILE_BYTES, IngestOptions


def test_the_value_is_made_from_keywords_and_normalised(tmp_path: Path) -> None:
    made = IngestOptions.of(str(tmp_path), include=["*.md"], within={str(tmp_path / "b"), str(tmp_path / "a")})
    assert made.root == tmp_path and made.include == ("*.md",) and made.exclude == ()
    assert made.within == (str(tmp_path / "a"), str(tmp_path / "b"))
    assert made.ray is None and made.max_bytes == MAX_FILE_BYTES
    assert IngestOptions(tmp_path, max_file_mb=0.5).max_bytes == 2**19
    assert IngestOptions.of(made) is made  # taken as made: nothing checked again


@pytest.mark.parametrize(("given", "message"), [
    ({"include": "*.md"}, "include must be a list of patterns"),
    ({"exclude": [1]}, "exclude must be a list of patterns"),
    ({"within": "/x"}, "within must be a list of paths"),
    ({"max_file_mb": 0}, "max_file_mb must be a number of MB"),
    ({"max_file_mb": True}, "max_file_mb must be a number of MB"),
    ({"workers": "bogus"}, "workers 'bogus': use"),
    ({"gpus_per_actor": 1}, "--gpus-per-actor reserves GPUs"),
    ({"workers": "ray", "actors": 0}, "actors must be a whole number"),
])
def test_a_bad_option_is_one_line_naming_it(tmp_path: Path, given: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        IngestOptions(tmp_path, **given)  # type: ignore[arg-type]


def test_the_root_is_checked_when_the_value_is_made(tmp_path: Path) -> None:
    with pytest.raises(SearchappError, match="no such file or folder"):
        IngestOptions(tmp_path / "missing")
    (tmp_path / "a.xyz").write_text("x")
    with pytest.raises(ConfigError, match="unsupported file type '.xyz'"):
        IngestOptions(tmp_path / "a.xyz")
    with pytest.raises(ConfigError, match="the root to ingest must be a path, got int"):
        IngestOptions(3)  # type: ignore[arg-type]
    made = IngestOptions(tmp_path)
    with pytest.raises(ConfigError, match="give force in the IngestOptions, not beside it"):
        IngestOptions.of(made, force=True)
