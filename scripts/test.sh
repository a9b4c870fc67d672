#!/usr/bin/env bash
# Set up ragloom with its test extras and run the test suite (offline: no network is used by any test).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test,remote,code,llm,chroma,milvus,milvus-server
. .venv/bin/activate
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
python -m pytest -q "$@"
