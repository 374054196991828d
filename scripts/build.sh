#!/usr/bin/env bash
# Configures and builds dlaunch into ${BUILD_DIR:-build}. Incremental and quick when up to date.
#   scripts/build.sh [--torch-python PYTHON] [target...]   (default: everything, tests included)
#   DLAUNCH_WERROR=ON scripts/build.sh ...                 every warning an error, as CI builds
#
# dlaunch-worker is built on the first LibTorch CMake finds: Debian's libtorch-dev (CPU, 1.13)
# by default, or, with --torch-python, the LibTorch inside that Python's PyTorch wheel (a site's
# conda, a venv: CUDA and NCCL when the wheel has them). Use one build folder per LibTorch:
#   BUILD_DIR=build-torch2 scripts/build.sh --torch-python "$(command -v python)"
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
torch_args=()
if [ "${1:-}" = "--torch-python" ]; then
  [ $# -ge 2 ] || { echo "build.sh: --torch-python needs a python executable" >&2; exit 2; }
  python=$2
  shift 2
  prefix=$("$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)') || {
    echo "build.sh: '$python' cannot import torch (install PyTorch there, or scripts/torch-venv.sh)" >&2
    exit 3
  }
  torch_args=(-DCMAKE_PREFIX_PATH="$prefix" -DDLAUNCH_BUILD_WORKER=ON)
  # The wheel's CUDA LibTorch needs nvcc to configure; the toolkit is often not on PATH.
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
  fi
fi
# Given on every configure, so that a build folder follows the environment (unset: OFF).
werror=(-DDLAUNCH_WERROR="${DLAUNCH_WERROR:-OFF}")
# Always configure (a few seconds): packages installed since the last run (GoogleTest after the
# demo, LibTorch) are picked up.
# ccache, when installed, makes rebuilds of unchanged translation units (LibTorch ones cost
# ~15 s each) nearly free across build folders.
# Paths under the checkout count as relative and the build folder is not hashed (it only names
# the debug info's working directory), so build folders share the cache.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
if [ -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" "${launcher[@]}" "${torch_args[@]}" "${werror[@]}" >/dev/null
else
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} \
    "${launcher[@]}" "${torch_args[@]}" "${werror[@]}" >/dev/null
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" "${targets[@]}"
