"""The bundled sample (data/sample), what a newcomer searches first, describes itself truly: its README.txt lists
exactly the files there, and is what scripts/make_sample.py writes."""

from __future__ import annotations

import runpy
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


def test_the_sample_readme_lists_exactly_its_files_and_is_what_the_script_writes() -> None:
    text = (SAMPLE / "README.txt").read_text()
    listed = {line.split()[0] for line in text.splitlines() if line and not line[0].isspace()
              and (SAMPLE / line.split()[0]).suffix and "  " in line}
    assert listed == {p.name for p in SAMPLE.iterdir()}
    script = runpy.run_path(str(SAMPLE.parents[1] / "scripts" / "make_sample.py"), run_name="not_main")
    assert script["DESCRIPTION"] == text
