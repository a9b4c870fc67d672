#!/usr/bin/env bash
# The torch-free install: create ./.venv-notorch with scripts/install_without_torch.sh (no torch,
# no sentence-transformers) and run tests/test_without_torch.py there (index, query, re-run).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv-notorch/bin/python ]; then
    "$PY" -m venv .venv-notorch
fi
. .venv-notorch/bin/activate
python -m pip install -q --upgrade pip
PYTHON=python bash scripts/install_without_torch.sh ".[office]"  # with an extra: its readers, still no torch
python -m pip install -q "pytest>=8" "hypothesis>=6.100"
if python -c "import torch" 2>/dev/null; then
    echo "torch is installed in .venv-notorch: the torch-free install is broken" >&2
    exit 1
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAGLOOM_REQUIRE_NO_TORCH=1
python -m pytest -q -rs tests/test_without_torch.py "$@"
