"""benchmarks/ on ``sys.path`` for a study run as ``python benchmarks/studies/NAME.py``: a study imports this first,
then ``_common`` and the maintained scripts' helpers by name, as the scripts in benchmarks/ do (this folder stays
first, so the studies import one another by name too)."""

import sys
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))
