#!/usr/bin/env bash
# The release, installed and used as a user would: scripts/release-tarball.sh's tarball unpacked
# and its wheel `pip install`ed into a venv (--no-index), each by a user who is not root in a
# clean environment, then a 2-node x 2-rank job of a Python script, `dlaunch doctor`, `dlaunch
# script` for Polaris, a hung rank named with its Python function through the bundled py-spy,
# and Ctrl-C with nothing left behind (release_session.sh).
#   tests/install/release_test.sh BUILD_DIR SOURCE_DIR
#
# Default (quick): the release is packed from this build's own binaries (no Release rebuild) and
# used on this machine; as root the sessions run as nobody (setpriv), else as the caller.
#
# DLAUNCH_INSTALL_TEST=full adds a fresh minimal chroot of the oldest Debian the release's glibc
# tag admits (11 for glibc 2.31, else 12) holding only python3, python3-venv and python3-pip (no
# compiler, gRPC, protobuf or yaml-cpp): the same two sessions there, as nobody, with the release
# packed above or the one DLAUNCH_RELEASE_DIR holds (scripts/release-bullseye.sh's; a relative
# path is the source tree's). Needs root and mmdebstrap; the chroot is cached as install_test's
# are (tests/install/chroot.sh).
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
variant=${DLAUNCH_INSTALL_TEST:-quick}
case "$variant" in quick|full) ;; *) echo "DLAUNCH_INSTALL_TEST must be quick or full" >&2; exit 2;; esac
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $* ($SECONDS s)"; }

spy=${DLAUNCH_PY_SPY:-$build/tools/py-spy/bin/py-spy}
if [ ! -x "$spy" ]; then
  echo "SKIP: no py-spy at $spy (scripts/py-spy.sh installs it)"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dlaunch-release.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"

step "the release, packed from $build"
mkdir "$tmp/out"
DLAUNCH_PY_SPY_BIN=$spy "$src/scripts/release-tarball.sh" --build-dir "$build" --out "$tmp/out" \
  >"$tmp/release.log" 2>&1 || { cat "$tmp/release.log"; fail "scripts/release-tarball.sh"; }
tarball=$(ls "$tmp"/out/dlaunch-*-linux-x86_64-glibc*.tar.gz)
wheel=$(ls "$tmp"/out/dlaunch-*-py3-none-manylinux_*_x86_64.whl)
glibc=${tarball##*-glibc}; glibc=${glibc%.tar.gz}
[[ $wheel == *-manylinux_${glibc/./_}_x86_64.whl ]] || fail "$wheel is not tagged for glibc $glibc"
echo "$(basename "$tarball") $(du -k "$tarball" | cut -f1) KB, $(basename "$wheel") $(du -k "$wheel" | cut -f1) KB"
# grep reads to the end (no -q): with pipefail, a writer cut off by SIGPIPE would fail the pipe.
if python3 -m zipfile -l "$wheel" | grep 'dlaunch-worker' >/dev/null; then
  fail "the wheel holds dlaunch-worker"
fi

# A session's folder: the job scripts, owned by the user who runs it.
session_dir() {
  mkdir "$tmp/$1"
  cp "$src/tests/install/release_session.sh" "$src/tests/install/release_job.py" \
     "$src/tests/integration/stuck_rank.py" "$tmp/$1/"
  [ "$(id -u)" != 0 ] || chown -R 65534:65534 "$tmp/$1"
  echo "$tmp/$1"
}
as_user=()
[ "$(id -u)" != 0 ] || as_user=(setpriv --reuid 65534 --regid 65534 --clear-groups)

for kind in tarball wheel; do
  step "$kind on this machine, as $([ "$(id -u)" = 0 ] && echo nobody || id -un)"
  dir=$(session_dir "$kind")
  [ $kind = tarball ] && artefact=$tarball || artefact=$wheel
  "${as_user[@]}" env -i HOME="$dir" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 TERM=dumb \
    bash "$dir/release_session.sh" $kind "$artefact" "$dir" || fail "the $kind session"
done

if [ "$variant" = quick ]; then
  step "quick variant passed (DLAUNCH_INSTALL_TEST=full adds a fresh Debian chroot)"
  exit 0
fi

[ "$(id -u)" = 0 ] || fail "DLAUNCH_INSTALL_TEST=full needs root (mmdebstrap, chroot, mounts)"
command -v mmdebstrap >/dev/null || fail "no mmdebstrap: scripts/install-deps.sh test"
release=${DLAUNCH_RELEASE_DIR:-$tmp/out}
# A relative DLAUNCH_RELEASE_DIR is the source tree's (build-bullseye/release), not the folder
# ctest runs the test in.
case $release in /*) ;; *) release=$src/$release ;; esac
tarball=$(ls "$release"/dlaunch-*-linux-x86_64-glibc*.tar.gz 2>/dev/null | tail -1)
wheel=$(ls "$release"/dlaunch-*-py3-none-manylinux_*_x86_64.whl 2>/dev/null | tail -1)
[ -n "$tarball" ] && [ -n "$wheel" ] ||
  fail "no release tarball and wheel in $release (scripts/release-bullseye.sh makes them)"
need=${tarball##*-glibc}; need=${need%.tar.gz}
# The oldest Debian whose glibc the release's tag admits: 11 (2.31), else 12 (2.36).
if [ "$(printf '%s\n' "$need" 2.31 | sort -V | tail -1)" = 2.31 ]; then
  CHROOT_SUITE=bullseye; debian=11
else
  CHROOT_SUITE=bookworm; debian=12
fi
. "$src/tests/install/chroot.sh"
step "Debian $debian chroot for a glibc $need release: python3, python3-venv, python3-pip only"
root=$(cached_chroot python3 python3-venv python3-pip) || fail "building the chroot"
for t in cc gcc g++ c++ protoc grpc_cpp_plugin cmake; do
  [ ! -e "$root/usr/bin/$t" ] || fail "the chroot has /usr/bin/$t"
done
! ls "$root"/usr/lib/x86_64-linux-gnu/ | grep -E '^lib(grpc|protobuf|yaml-cpp|absl|hwloc)' ||
  fail "the chroot has gRPC, protobuf, yaml-cpp, abseil or hwloc libraries"
have=$(chroot "$root" ldd --version | sed -n '1s/.* \([0-9.]*\)$/\1/p')  # not head: SIGPIPE
echo "chroot: glibc $have, $(chroot "$root" dpkg-query -W -f '${Package}\n' | wc -l) packages"
[ "$(printf '%s\n' "$need" "$have" | sort -V | tail -1)" = "$have" ] ||
  fail "$(basename "$tarball") needs glibc $need, newer than the chroot's $have"
for kind in tarball wheel; do
  step "$kind in the chroot, as nobody"
  dir=$(session_dir chroot-$kind)
  [ $kind = tarball ] && artefact=$tarball || artefact=$wheel
  run_in_chroot "$root" "$release" "$dir" bash /home/session/release_session.sh $kind \
    "/opt/dlaunch/$(basename "$artefact")" /home/session || fail "the $kind session in the chroot"
done
step "full variant passed"
