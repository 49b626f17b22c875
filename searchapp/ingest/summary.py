"""What an ingest reports: the counts, the files that failed or were skipped and why, the warnings."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

# How the summary counts the files skipped without a warning, and those refused before reading: every key is
# always present in the JSON.
SKIP_REASONS = ("hidden", "ignored", "unsupported", "excluded", "empty", "too_large")
# The most skipped files and folders an ingest lists by path (``skipped_files``); the rest are counted
# (``skipped_files_omitted``): a repository's node_modules must not make a summary of megabytes.
MAX_SKIPPED_LISTED = 1000

@dataclass
class IngestSummary:
    """Outcome of one ingest. ``failures`` holds (path, reason) for each file skipped with a warning, ``warnings``
    (path, warning) for files indexed despite a problem (a malformed PDF read as far as possible) and ignore files
    read in part; ``skipped`` counts files left out by reason (:data:`SKIP_REASONS`: hidden, ignored by the ignore
    files, unsupported type, excluded by ``--include``/``--exclude``, empty (read, and nothing to search in it: no
    failure), and too large, which are also failures: they get a warning)."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: int = 0
    passages_embedded: int = 0
    # Passages written with a stored vector they kept (their embedding input unchanged: ingest/reuse.py).
    passages_reused: int = 0
    seconds: float = 0.0
    failures: list[tuple[str, str]] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    # (path, reason) of the files and folders (a folder's path ends in a separator) ``skipped`` counts, the first
    # MAX_SKIPPED_LISTED of them in the walk's order; how many more.
    skipped_files: list[tuple[str, str]] = field(default_factory=list)
    skipped_files_omitted: int = 0

    def skip(self, reason: str, where: str | None = None) -> None:
        """Count one file or folder left out for ``reason``, listed by path where it is given."""
        self.skipped[reason] += 1
        if where is None:
            return
        if len(self.skipped_files) < MAX_SKIPPED_LISTED:
            self.skipped_files.append((where, reason))
        else:
            self.skipped_files_omitted += 1

    def to_dict(self) -> dict[str, object]:
        """The stable JSON form documented in docs/cli.md."""
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "failed": self.failed,
            "passages_embedded": self.passages_embedded,
            "passages_reused": self.passages_reused,
            "seconds": round(self.seconds, 3),
            "failures": [{"path": p, "reason": r} for p, r in self.failures],
            "skipped": {reason: self.skipped[reason] for reason in SKIP_REASONS},
            "warnings": [{"path": p, "warning": w} for p, w in self.warnings],
            "skipped_files": [{"path": p, "reason": r} for p, r in self.skipped_files],
            "skipped_files_omitted": self.skipped_files_omitted,
        }
