#!/usr/bin/env bash
# Configures and builds dlaunch into ${BUILD_DIR:-build}. Incremental and quick when up to date.
#   scripts/build.sh [target...]     (default: everything, tests included)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# Always configure (a few seconds): packages installed since the last run (GoogleTest after the
# demo, LibTorch) are picked up.
# ccache, when installed, makes rebuilds of unchanged translation units (LibTorch ones cost
# ~15 s each) nearly free across build folders.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" "${launcher[@]}" >/dev/null
else
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} \
    "${launcher[@]}" >/dev/null
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" "${targets[@]}"
