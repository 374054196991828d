#!/usr/bin/env bash
# Installs py-spy, pinned, from PyPI (a static binary wheel) into a virtual environment inside the
# build tree and prints its path. The agent runs it for the Python stacks of hung ranks
# (docs/failures.md); the tests find it there (DLAUNCH_PY_SPY). Never touches the system Python.
# Idempotent: when the pinned version is there it only asks it for its version.
#   scripts/py-spy.sh [VENV_DIR]        (default: ${BUILD_DIR:-build}/tools/py-spy)
set -euo pipefail
cd "$(dirname "$0")/.."
PY_SPY_VERSION=0.4.3
VENV=${1:-${BUILD_DIR:-build}/tools/py-spy}
PYTHON=${DLAUNCH_VENV_PYTHON:-/usr/bin/python3}
bin="$VENV/bin/py-spy"

if [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null)" = "py-spy $PY_SPY_VERSION" ]; then
  echo "$bin"
  exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV" >&2 || {
    echo "py-spy: '$PYTHON -m venv' failed (Debian: scripts/install-deps.sh stacks)" >&2
    exit 3
  }
fi
echo "py-spy: installing py-spy==$PY_SPY_VERSION into $VENV" >&2
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "py-spy==$PY_SPY_VERSION" >&2
echo "$bin"
