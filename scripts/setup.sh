#!/usr/bin/env bash
# Create ./.venv and install ragloom into it (CPU PyTorch first, so pip does not pull a CUDA build).
# Usage: bash scripts/setup.sh [extras]   e.g. bash scripts/setup.sh test
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-}"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -c "import torch" 2>/dev/null || python -m pip install -q torch==2.13.0
if [ -n "$EXTRAS" ]; then
    python -m pip install -q -e ".[$EXTRAS]"
else
    python -m pip install -q -e .
fi
