#!/usr/bin/env bash
# Builds the relocatable release of dlaunch: a tarball (unpack anywhere, run bin/dlaunch) and a
# platform wheel (`pip install` puts dlaunch, dlaunch-agent and dlaunch-relay on PATH) holding
# the same tree, and prints their paths.
#   scripts/release-tarball.sh [--build-dir DIR] [--out DIR] [--no-wheel]
#
# Without --build-dir it configures and builds dlaunch, dlaunch-agent and dlaunch-relay Release
# in ${BUILD_DIR:-build-release-pkg} (no tests, no worker); with it, it packs the binaries that
# build folder already has (tests/install/release_test.sh packs the test build's). The tree is
# `cmake --install`'s, stripped of debug info, with py-spy (scripts/py-spy.sh, or the binary
# DLAUNCH_PY_SPY_BIN names) in libexec/dlaunch/ where the agent looks, and every shared library
# the binaries load beyond a base system's bundled in lib/ (scripts/release_libs.py).
# dlaunch-worker is left out: it needs LibTorch, which a user builds it against
# (docs/worker.md, "Building").
#
# The glibc in the names is the highest GLIBC_ symbol version any file needs, or higher where the
# libstdc++ it needs (GLIBCXX_) first comes with a newer manylinux policy: the oldest glibc the
# release runs on. Build it on an older system for an older glibc (deploy/README.md,
# "A release for older Linux"). Needs patchelf and objdump (scripts/install-deps.sh build).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build= out= wheel=1
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-wheel) wheel=0; shift ;;
    *) echo "usage: scripts/release-tarball.sh [--build-dir DIR] [--out DIR] [--no-wheel]" >&2; exit 2 ;;
  esac
done
for tool in patchelf objdump ldd; do
  command -v $tool >/dev/null || { echo "release: no $tool (scripts/install-deps.sh build)" >&2; exit 3; }
done

if [ -z "$build" ]; then
  build=${BUILD_DIR:-$src/build-release-pkg}
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLAUNCH_BUILD_TESTS=OFF \
    -DDLAUNCH_BUILD_WORKER=OFF >/dev/null
  cmake --build "$build" -j "${JOBS:-$(nproc)}" --target dlaunch dlaunch-agent dlaunch-relay
fi
build=$(cd "$build" && pwd)
out=$(mkdir -p "${out:-$build/release}" && cd "${out:-$build/release}" && pwd)
for b in dlaunch dlaunch-agent dlaunch-relay; do
  [ -x "$build/bin/$b" ] || { echo "release: $build/bin/$b is not built" >&2; exit 3; }
done
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[ -n "$version" ] || { echo "release: no project version in $build/CMakeCache.txt" >&2; exit 3; }

work=$(mktemp -d "${TMPDIR:-/tmp}/dlaunch-release.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree=$work/dlaunch-$version
# Every part but dlaunch-worker (its own install component).
cmake --install "$build" --prefix "$tree" --component Unspecified >"$work/install.log" ||
  { cat "$work/install.log" >&2; exit 3; }
strip --strip-debug "$tree"/bin/*

spy=${DLAUNCH_PY_SPY_BIN:-}
[ -n "$spy" ] || spy=$(BUILD_DIR="$build" "$src/scripts/py-spy.sh" "$build/tools/py-spy")
install -D -m 0755 "$spy" "$tree/libexec/dlaunch/py-spy"
license=$(ls "$(dirname "$spy")"/../lib/python3*/site-packages/py_spy-*.dist-info/licenses/LICENSE \
          2>/dev/null | head -1 || true)
[ -z "$license" ] || install -D -m 0644 "$license" "$tree/share/doc/dlaunch/py-spy.LICENSE"

python3 "$src/scripts/release_libs.py" "$tree" >"$work/libs.json"
glibc=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tag_glibc"])' "$work/libs.json")
cp "$work/libs.json" "$tree/share/doc/dlaunch/release-libs.json"

tarball=$out/dlaunch-$version-linux-x86_64-glibc$glibc.tar.gz
tar -C "$work" --owner=0 --group=0 --numeric-owner -czf "$tarball" "dlaunch-$version"
echo "$tarball"
if [ $wheel = 1 ]; then
  platform=manylinux_$(tr . _ <<<"$glibc")_x86_64
  name=$(python3 - "$src/python/build_backend" "$out" "$tree" "$platform" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import dlaunch_build
print(dlaunch_build.build_platform_wheel(sys.argv[2], sys.argv[3], sys.argv[4]))
PY
)
  echo "$out/$name"
fi
