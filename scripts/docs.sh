#!/usr/bin/env bash
# Build the documentation site offline into site/ (`make docs`).
#
# Usage: scripts/docs.sh [extra mkdocs build args]
# Executes the tutorial notebooks once (cached in .docs-cache/ by content hash,
# see scripts/docs_notebooks.py) and fails on a notebook error, a broken
# internal link or a docstring the API pages cannot render (--strict).
# Environment: ATTNWIDGET_DOCS_WORKERS (notebooks run at once, default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${VIRTUAL_ENV:-}" ] && [ -x .venv/bin/python ]; then
  # shellcheck disable=SC1091
  . .venv/bin/activate
fi
# Nothing is fetched: the demo models ship with the package.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 NO_MKDOCS_2_WARNING=1
# One torch thread per notebook kernel: two kernels share the two cores.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
SECONDS=0
python -m mkdocs build --strict --clean --site-dir site "$@"
echo "docs: built site/ in ${SECONDS}s"
