#!/usr/bin/env bash
# Set up ragloom, index the bundled example folder (English + Chinese), query it, and ask it a
# question answered by the offline toy LLM (SmolLM2-135M: tests the pipeline, not a real answerer).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh llm
. .venv/bin/activate
INDEX_DIR="${INDEX_DIR:-./ragloom_index}"
ragloom index examples/data --index-dir "$INDEX_DIR"
echo
echo '$ ragloom query "How hot should the water be for green tea?" -k 2'
ragloom query "How hot should the water be for green tea?" -k 2 --index-dir "$INDEX_DIR"
echo '$ ragloom query "大熊猫每天吃多少竹子" -k 2'
ragloom query "大熊猫每天吃多少竹子" -k 2 --index-dir "$INDEX_DIR"
echo '$ ragloom ask "How hot should the water be for green tea?" -k 2   # offline toy LLM'
ragloom ask "How hot should the water be for green tea?" -k 2 --index-dir "$INDEX_DIR"
