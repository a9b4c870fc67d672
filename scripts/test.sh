#!/usr/bin/env bash
# Set up ragloom with its test extras, run the static checks (scripts/lint.sh), then the test suite
# (offline: no network is used by any test).  RAGLOOM_SKIP_LINT=1 skips the static checks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test,torch,remote,code,llm,chroma,milvus,milvus-server,server,office,epub,outlook,ray
if [ "${RAGLOOM_SKIP_LINT:-0}" != 1 ]; then
    bash scripts/lint.sh
fi
. .venv/bin/activate
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
python -m pytest -q "$@"
