#!/usr/bin/env bash
# Builds dlaunch in Release mode and installs it under a prefix.
#   deploy/install.sh [PREFIX]          (default /usr/local)
# Environment: BUILD_DIR (default build-release in the source tree), DLAUNCH_BUILD_WORKER
# (ON, OFF or AUTO; default AUTO: dlaunch-worker is built when LibTorch is found),
# SKIP_DEPS=1 to skip scripts/install-deps.sh (e.g. on a machine without apt, where the
# dependencies come from modules or Spack instead), TORCH_PYTHON=<python> to build
# dlaunch-worker on that Python's PyTorch (a site's conda: CUDA and NCCL) instead of Debian's.
set -euo pipefail

prefix="${1:-/usr/local}"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$src/build-release}"
worker="${DLAUNCH_BUILD_WORKER:-AUTO}"
torch=()
if [ -n "${TORCH_PYTHON:-}" ]; then
  torch=(-DCMAKE_PREFIX_PATH="$("$TORCH_PYTHON" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')")
  worker=ON
  command -v nvcc >/dev/null || [ ! -x /usr/local/cuda/bin/nvcc ] || export PATH=/usr/local/cuda/bin:$PATH
fi

if [ "${SKIP_DEPS:-0}" != 1 ]; then
  groups=(build)
  [ "$worker" = OFF ] || [ -n "${TORCH_PYTHON:-}" ] || groups+=(worker)
  "$src/scripts/install-deps.sh" "${groups[@]}"
fi

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$src" -B "$build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DDLAUNCH_BUILD_TESTS=OFF \
  -DDLAUNCH_BUILD_WORKER="$worker" "${torch[@]}"
cmake --build "$build" -j "$(nproc)"
cmake --install "$build"

echo "dlaunch installed in $prefix:"
echo "  $prefix/bin/dlaunch, dlaunch-agent$( [ -x "$prefix/bin/dlaunch-worker" ] && echo ', dlaunch-worker')"
echo "  module file: module use $prefix/share/modulefiles && module load dlaunch"
