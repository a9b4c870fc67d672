#!/usr/bin/env bash
# The base package alone: create ./.venv-base with ragloom and no extras (plus pytest and
# hypothesis), and run the tests that need nothing more.  Tests that need an extra (remote, code,
# llm, chroma, milvus, milvus-server …) are skipped by --skip-missing-extras (tests/conftest.py),
# so an import of an optional dependency that leaks into the base package fails here.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv-base/bin/python ]; then
    "$PY" -m venv .venv-base
fi
. .venv-base/bin/activate
python -m pip install -q --upgrade pip
# CPU PyTorch first, so pip does not pull a multi-GB CUDA build (as scripts/setup.sh does)
python -c "import torch" 2>/dev/null || python -m pip install -q torch==2.13.0
python -m pip install -q -e .
python -m pip install -q "pytest>=8" "hypothesis>=6.100"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
python -m pytest -q --skip-missing-extras "$@"
