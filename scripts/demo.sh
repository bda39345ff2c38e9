#!/usr/bin/env bash
# The main job: set up, then open the quickstart notebook in JupyterLab on the
# shipped demo models. With --headless, execute the notebook offline instead
# and write a self-contained HTML page (default out/quickstart.html).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# shellcheck disable=SC1091
. .venv/bin/activate
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
if [ "${1:-}" = "--headless" ]; then
  shift
  python scripts/run_notebook.py notebooks/quickstart.ipynb "${1:-out/quickstart.html}"
else
  ROOT_FLAG=""; [ "$(id -u)" -eq 0 ] && ROOT_FLAG="--allow-root"
  exec jupyter lab $ROOT_FLAG notebooks/quickstart.ipynb
fi
