#!/usr/bin/env bash
# Set up (or refresh) the project's virtual environment in .venv.
# torch is pinned to the CPU build through constraints.txt; the editable
# install also builds the JS bundle (npm, via hatch-jupyter-builder).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
python -m pip install --quiet -c constraints.txt -e ".[test,notebook]"
# The bundle is built by the install; rebuild it when js/ changed since.
if [ ! -f attnwidget/static/widget.js ] || [ -n "$(find js/src -newer attnwidget/static/widget.js -print -quit)" ]; then
  (cd js && npm ci --no-audit --no-fund --silent && npm run --silent build)
fi
