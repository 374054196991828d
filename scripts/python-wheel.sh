#!/usr/bin/env bash
# Builds the dlaunch Python package (python/) as a wheel and prints its path. Standard library
# only: the package's own build backend packs it, so no package index is needed.
#   scripts/python-wheel.sh [OUT_DIR]        (default: build/python-dist)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${BUILD_DIR:-build}/python-dist}
PYTHON=${DLAUNCH_PYTHON:-python3}
mkdir -p "$OUT"
"$PYTHON" - "$OUT" <<'PY'
import os, sys
sys.path.insert(0, os.path.join("python", "build_backend"))
import dlaunch_build
print(os.path.join(sys.argv[1], dlaunch_build.build_wheel(sys.argv[1])))
PY
