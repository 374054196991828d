#!/usr/bin/env bash
# Builds dlaunch in Release mode and installs it under a prefix.
#   deploy/install.sh [PREFIX]          (default /usr/local)
# Environment: BUILD_DIR (default build-release in the source tree), DLAUNCH_BUILD_WORKER
# (ON, OFF or AUTO; default AUTO: dlaunch-worker is built when LibTorch is found),
# SKIP_DEPS=1 to skip scripts/install-deps.sh (e.g. on a machine without apt, where the
# dependencies come from modules or Spack instead), TORCH_PYTHON=<python> to build
# dlaunch-worker on that Python's PyTorch (a site's conda: CUDA and NCCL) instead of Debian's,
# PY_SPY=0 to leave out py-spy (the Python stacks of hung ranks, docs/failures.md; it comes
# from PyPI, pinned, and is installed as PREFIX/libexec/dlaunch/py-spy, where the agent looks),
# GRPC_RELEASE=1 to link a release build (NDEBUG) of the same gRPC and abseil, built once from
# Debian's sources (scripts/grpc-from-debian-source.sh) and installed as PREFIX/lib/dlaunch/:
# Debian's gRPC is built without NDEBUG, which costs a launcher of thousands of agents
# (deploy/README.md).
set -euo pipefail

prefix="${1:-/usr/local}"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$src/build-release}"
worker="${DLAUNCH_BUILD_WORKER:-AUTO}"
prefix_path=()
rpath=()
if [ -n "${TORCH_PYTHON:-}" ]; then
  prefix_path+=("$("$TORCH_PYTHON" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')")
  worker=ON
  # The installed dlaunch-worker keeps its run path to the wheel's libraries, which
  # `cmake --install` would strip (scripts/build-worker.sh does the same).
  rpath=(-DCMAKE_INSTALL_RPATH_USE_LINK_PATH=ON)
  command -v nvcc >/dev/null || [ ! -x /usr/local/cuda/bin/nvcc ] || export PATH=/usr/local/cuda/bin:$PATH
fi

if [ "${SKIP_DEPS:-0}" != 1 ]; then
  groups=(build)
  [ "$worker" = OFF ] || [ -n "${TORCH_PYTHON:-}" ] || groups+=(worker)
  "$src/scripts/install-deps.sh" "${groups[@]}"
fi

grpc=()
if [ "${GRPC_RELEASE:-0}" = 1 ]; then
  grpc_prefix=$("$src/scripts/grpc-from-debian-source.sh" release)
  prefix_path+=("$grpc_prefix")
  export PKG_CONFIG_PATH="$grpc_prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  # The installed binaries find the libraries beside them, wherever the tree is moved.
  grpc=(-DCMAKE_INSTALL_RPATH='$ORIGIN/../lib/dlaunch')
fi
cmake_prefix_path=$(IFS=';'; echo "${prefix_path[*]}")

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$src" -B "$build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DDLAUNCH_BUILD_TESTS=OFF \
  -DDLAUNCH_BUILD_WORKER="$worker" -DCMAKE_PREFIX_PATH="$cmake_prefix_path" "${grpc[@]}" "${rpath[@]}"
cmake --build "$build" -j "$(nproc)"
cmake --install "$build"
if [ "${GRPC_RELEASE:-0}" = 1 ]; then
  mkdir -p "$prefix/lib/dlaunch"
  cp -a "$grpc_prefix"/lib/lib*.so* "$prefix/lib/dlaunch/"
fi
if [ "${PY_SPY:-1}" = 1 ]; then
  [ "${SKIP_DEPS:-0}" = 1 ] || "$src/scripts/install-deps.sh" stacks
  if spy=$(BUILD_DIR="$build" "$src/scripts/py-spy.sh" "$build/tools/py-spy"); then
    install -D -m 0755 "$spy" "$prefix/libexec/dlaunch/py-spy"
  else
    echo "install: py-spy could not be installed; hung Python ranks get gdb's native stacks only" >&2
  fi
fi

echo "dlaunch installed in $prefix:"
echo "  $prefix/bin/dlaunch, dlaunch-agent, dlaunch-relay$( [ -x "$prefix/bin/dlaunch-worker" ] && echo ', dlaunch-worker')"
[ ! -x "$prefix/libexec/dlaunch/py-spy" ] || echo "  $prefix/libexec/dlaunch/py-spy (Python stacks of hung ranks)"
echo "  module file: module use $prefix/share/modulefiles && module load dlaunch"
