#!/usr/bin/env bash
# Adds PyTorch Lightning and Hugging Face transformers from PyPI to the PyTorch 2.x virtual
# environment of scripts/torch-venv.sh, for the tests of the dlaunch Python package's callbacks,
# and prints the environment's python. Never makes the environment (that is a 3 GB download) and
# never touches the system Python: without the environment it says so and exits 3, and those
# tests skip. Idempotent: quick when both are there.
#   scripts/python-test-venv.sh [VENV_DIR]        (default: build-torch2/venv)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-${BUILD_DIR_TORCH2:-build-torch2}/venv}
if [ ! -x "$VENV/bin/python" ]; then
  echo "python-test-venv: no $VENV (make it with scripts/torch-venv.sh); the callbacks' tests skip" >&2
  exit 3
fi
if ! "$VENV/bin/python" -c "import lightning, transformers, accelerate" 2>/dev/null; then
  echo "python-test-venv: installing lightning, transformers and accelerate (its Trainer needs it) into $VENV" >&2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check lightning transformers accelerate >&2
fi
echo "$VENV/bin/python"
