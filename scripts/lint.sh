#!/usr/bin/env bash
# Static checks with the project venv (./.venv, set up by scripts/setup.sh with the test extra):
#   ruff: pyflakes, pycodestyle, bugbear, mccabe complexity ([tool.ruff] in pyproject.toml)
#   mypy: the typed core — schema, span engine, storage, ingestion ([tool.mypy] in pyproject.toml)
# Both run even when the first fails; the exit status is non-zero if either found something.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
if ! "$PY" -m ruff --version >/dev/null 2>&1 || ! "$PY" -m mypy --version >/dev/null 2>&1; then
    echo "lint.sh: ruff/mypy not in .venv: run  bash scripts/setup.sh test" >&2
    exit 2
fi
status=0
echo "== ruff check"
"$PY" -m ruff check src tests benchmarks scripts || status=1
echo "== mypy"
"$PY" -m mypy || status=1
exit $status
