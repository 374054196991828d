#!/usr/bin/env bash
# Builds dlaunch-worker alone on a user's PyTorch (a conda environment, a venv), without root:
# the LibTorch inside that Python's torch package (CUDA and NCCL when the wheel has them), and
# only what the worker links besides, protobuf (protoc and libprotobuf, for the report schema),
# abseil and zlib. No gRPC, yaml-cpp, Boost, hwloc or OpenSSL: the launcher and agent come from
# an installation (module, Spack, deploy/install.sh) and need not be built here.
#   scripts/build-worker.sh --torch PYTHON [--deps PREFIX]... [--prefix PREFIX]
# --deps adds a prefix where protobuf and abseil are (a conda environment's $CONDA_PREFIX, a
# module's root, a private install); without it CMake looks where it always does. --prefix
# installs bin/dlaunch-worker there (e.g. the prefix of the launcher's installation). The build
# folder is ${BUILD_DIR:-build-worker}; JOBS sets the parallel jobs (default: every core).
set -euo pipefail
usage() { sed -n 's/^#   //p' "$0" >&2; exit 2; }
python="" prefix="" deps=()
while [ $# -gt 0 ]; do
  case "$1" in
    --torch) [ $# -ge 2 ] || usage; python=$2; shift 2 ;;
    --deps) [ $# -ge 2 ] || usage; deps+=("$(cd "$2" && pwd)"); shift 2 ;;
    --prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
    *) usage ;;
  esac
done
[ -n "$python" ] || usage
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-worker}

torch=$("$python" -c 'import torch, torch.utils; print(torch.__version__); print(torch.utils.cmake_prefix_path)') || {
  echo "build-worker: $python cannot import torch" >&2
  exit 3
}
echo "build-worker: PyTorch $(head -n 1 <<<"$torch") from $python"
prefix_path=$(IFS=';'; echo "$(tail -n 1 <<<"$torch")${deps[*]:+;${deps[*]}}")
# The wheel's CMake files ask for the CUDA toolkit (nvcc) when its LibTorch is a CUDA one.
command -v nvcc >/dev/null || [ ! -x /usr/local/cuda/bin/nvcc ] || export PATH=/usr/local/cuda/bin:$PATH
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
install=()
[ -z "$prefix" ] || install=(-DCMAKE_INSTALL_PREFIX="$prefix")
# The installed binary keeps the run path to the wheel's libraries (and those under --deps) that
# CMake would otherwise strip on install.
cmake -S . -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DDLAUNCH_WORKER_ONLY=ON \
  -DCMAKE_INSTALL_RPATH_USE_LINK_PATH=ON \
  -DCMAKE_PREFIX_PATH="$prefix_path" "${install[@]}"
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target dlaunch-worker
[ -z "$prefix" ] || cmake --install "$BUILD_DIR"
echo "build-worker: $BUILD_DIR/bin/dlaunch-worker"
