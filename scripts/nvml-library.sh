#!/usr/bin/env bash
# Fetches NVIDIA's NVML library (libnvidia-ml.so.1, the driver's own, from Debian's non-free
# archive) into a folder and prints its path, so that the agent's NVML loader can be tested for
# real on a machine without a GPU: the library loads, has every entry point, and nvmlInit_v2
# answers "Driver Not Loaded". The CUDA toolkit on the project's machines ships no NVML stub, and
# PyPI's nvidia-nvml-dev carries only the header. The .deb is unpacked with dpkg -x, never
# installed; its SHA-256 is checked against the archive's Packages index.
#   scripts/nvml-library.sh [DIR]        (default: ${BUILD_DIR:-build}/nvml)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-${BUILD_DIR:-build}/nvml}
MIRROR=${DLAUNCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
lib=$(find "$DIR" -name libnvidia-ml.so.1 2>/dev/null | head -n 1 || true)
if [ -z "$lib" ]; then
  mkdir -p "$DIR"
  curl -fsS -o "$DIR/Packages.xz" "$MIRROR/dists/bookworm/non-free/binary-amd64/Packages.xz"
  entry=$(xz -dc "$DIR/Packages.xz" |
          awk '/^Package: / {p = ($2 == "libnvidia-ml1")} p && /^Filename:/ {f=$2}
               p && /^SHA256:/ && !done {print f, $2; done=1}')
  [ -n "$entry" ] || { echo "nvml-library: libnvidia-ml1 not found in $MIRROR non-free" >&2; exit 3; }
  read -r file sha <<<"$entry"
  curl -fsS -o "$DIR/libnvidia-ml1.deb" "$MIRROR/$file"
  echo "$sha  $DIR/libnvidia-ml1.deb" | sha256sum -c --quiet - >&2
  dpkg -x "$DIR/libnvidia-ml1.deb" "$DIR/root"
  lib=$(find "$DIR" -name libnvidia-ml.so.1 | head -n 1)
fi
echo "$lib"
