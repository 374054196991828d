#!/usr/bin/env bash
# Installs py-spy, pinned, from PyPI (a static binary wheel) into a virtual environment inside the
# build tree and prints its path. The agent runs it for the Python stacks of hung ranks
# (docs/failures.md). It is linked as ${BUILD_DIR:-build}/libexec/dlaunch/py-spy, where the build
# tree's agent (bin/dlaunch-agent) looks for it beside its bin/, as an installed agent does, so the
# builds of scripts/demo.sh, scripts/test.sh and deploy/install.sh take Python stacks with no
# PATH or DLAUNCH_PY_SPY; the tests also name it in DLAUNCH_PY_SPY. Never touches the system
# Python. Idempotent: when the pinned version is there it only asks it for its version.
#   scripts/py-spy.sh [VENV_DIR]        (default: ${BUILD_DIR:-build}/tools/py-spy)
set -euo pipefail
cd "$(dirname "$0")/.."
PY_SPY_VERSION=0.4.3
VENV=${1:-${BUILD_DIR:-build}/tools/py-spy}
PYTHON=${DLAUNCH_VENV_PYTHON:-/usr/bin/python3}
bin="$VENV/bin/py-spy"

# <build>/libexec/dlaunch/py-spy -> the venv's binary (relative when the venv is in the build tree,
# so that the build folder can be moved).
link_into_build() {
  local build=${BUILD_DIR:-build} target
  mkdir -p "$build/libexec/dlaunch"
  target=$(realpath "$bin")
  case "$target" in "$(realpath "$build")"/*) target=../../${target#"$(realpath "$build")"/};; esac
  ln -sfn "$target" "$build/libexec/dlaunch/py-spy"
}

if [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null)" = "py-spy $PY_SPY_VERSION" ]; then
  link_into_build
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
link_into_build
echo "$bin"
