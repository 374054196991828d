#!/usr/bin/env bash
# Makes a virtual environment with PyTorch 2.x from PyPI (CUDA LibTorch, NCCL, cuDNN) for the
# second build of dlaunch-worker, and prints the environment's python. Never touches the system
# Python. Idempotent: quick when the pinned versions are already there.
#   scripts/torch-venv.sh [VENV_DIR]        (default: build-torch2/venv)
#
# The pin is the PyTorch that the project's GPU machine carries, so that a worker built here runs
# there.
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH_VERSION=${DLAUNCH_TORCH_VERSION:-2.11.0}
VENV=${1:-${BUILD_DIR:-build-torch2}/venv}
PYTHON=${DLAUNCH_VENV_PYTHON:-/usr/bin/python3}

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV" >&2 || {
    echo "torch-venv: '$PYTHON -m venv' failed (Debian: scripts/install-deps.sh torch2)" >&2
    exit 3
  }
fi
have=$("$VENV/bin/python" - <<'EOF' 2>/dev/null || true
import importlib.metadata as m
try:
    print(m.version("torch"))
except m.PackageNotFoundError:
    pass
EOF
)
if [ "$have" != "$TORCH_VERSION" ]; then
  echo "torch-venv: installing torch==$TORCH_VERSION into $VENV (about 3 GB with its CUDA libraries)" >&2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    "torch==$TORCH_VERSION" >&2
fi
echo "$VENV/bin/python"
