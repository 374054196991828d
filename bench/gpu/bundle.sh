#!/usr/bin/env bash
# Packs what a GPU machine without dlaunch's build dependencies needs to run dlaunch there:
# stripped dlaunch, dlaunch-agent and dlaunch-worker from a build on PyTorch 2.x's CUDA LibTorch
# (scripts/test-torch2.sh, or BUILD_DIR=build-torch2 scripts/build.sh --torch-python PY), the
# shared libraries they need beyond the C and C++ runtimes (gRPC, protobuf, Abseil, yaml-cpp,
# Boost, ...; LibTorch and CUDA come from the machine's own PyTorch), and Fashion-MNIST.
#   bench/gpu/bundle.sh [BUILD_DIR] [OUT_DIR]      (defaults: build-torch2, .gpu)
# On the GPU machine, bench/gpu/device_check.sh uses it.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-torch2}
DEST=${2:-.gpu}
DATA=${DLAUNCH_DATA_DIR:-/usr/share/datasets/fashion-mnist}
rm -rf "$DEST"
mkdir -p "$DEST/bin" "$DEST/lib" "$DEST/data"
for b in dlaunch dlaunch-agent dlaunch-worker; do
  [ -x "$BUILD/bin/$b" ] || { echo "bundle.sh: $BUILD/bin/$b not built" >&2; exit 2; }
  strip -o "$DEST/bin/$b" "$BUILD/bin/$b"
done
# Everything ldd resolves, except the C/C++ runtimes (the machine's own are newer), LibTorch
# and CUDA (the machine's PyTorch carries them).
for b in dlaunch dlaunch-agent dlaunch-worker; do ldd "$BUILD/bin/$b"; done |
  awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libutil|ld-linux[^/]*)\.so' |
  grep -v -E 'site-packages|/cuda' |
  while read -r lib; do cp -L "$lib" "$DEST/lib/"; done
cp "$DATA"/*.gz "$DEST/data/"
du -sh "$DEST"
