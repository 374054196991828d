#!/usr/bin/env bash
# Builds the relocatable release (scripts/release-tarball.sh: tarball and wheel) on Debian 11,
# whose glibc 2.31 is older than the systems dlaunch's users log in to (deploy/README.md, "A
# release for older Linux"), and prints the artefacts' paths. The build runs in a minimal
# Debian 11 chroot holding scripts/install-deps.sh's build packages as Debian 11 names them,
# made with mmdebstrap on the first run and cached as the install tests' chroots are
# (tests/install/chroot.sh); the checkout is bind-mounted at its own path.
#   sudo scripts/release-bullseye.sh            JOBS=N to build with N jobs (default: all cores)
# Output in ${BUILD_DIR:-build-bullseye}/release/. Needs root, mmdebstrap and the Debian archive
# (DLAUNCH_DEBIAN_MIRROR); py-spy comes from PyPI on this machine (scripts/py-spy.sh), since the
# chroot has no venv.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "release-bullseye: needs root (mmdebstrap, chroot, mounts)" >&2; exit 3; }
command -v mmdebstrap >/dev/null || { echo "release-bullseye: no mmdebstrap (scripts/install-deps.sh test)" >&2; exit 3; }
build=${BUILD_DIR:-build-bullseye}
case $build in /*) ;; *) build=$src/$build ;; esac
case $build in "$src"/*) ;; *) echo "release-bullseye: BUILD_DIR must be inside $src" >&2; exit 2 ;; esac

# scripts/install-deps.sh build (less ccache and git, which the release does not use), plus what
# scripts/release-tarball.sh runs: patchelf, python3, file.
packages=(build-essential cmake ninja-build pkg-config ca-certificates libgrpc++-dev
  protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev libssl-dev libboost-dev
  libyaml-cpp-dev libkainjow-mustache-dev procps libhwloc-dev patchelf python3 file)

spy=$(BUILD_DIR="$build" "$src/scripts/py-spy.sh" "$build/tools/py-spy")
CHROOT_SUITE=bullseye
fail() { echo "release-bullseye: $*" >&2; exit 1; }
. "$src/tests/install/chroot.sh"
root=$(cached_chroot "${packages[@]}") || fail "making the Debian 11 build chroot"
mkdir -p "$root$src"
unshare --mount --propagation private -- bash -c '
  set -e
  root=$1 src=$2 build=$3 spy=$4 jobs=$5
  mount --bind "$src" "$root$src"
  mount -t proc proc "$root/proc"
  mount -t tmpfs tmpfs "$root/tmp"
  exec chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
    BUILD_DIR="$build" JOBS="$jobs" DLAUNCH_PY_SPY_BIN="$spy" \
    "$src/scripts/release-tarball.sh" --out "$build/release"
' release-bullseye "$root" "$src" "$build" "$spy" "${JOBS:-$(nproc)}"
