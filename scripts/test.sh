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
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
echo "== ruff"
ruff check .
ruff format --check .
echo "== js unit tests"
(cd js && npm test --silent)
echo "== pytest"
python -m pytest -q -p no:cacheprovider "$@"
