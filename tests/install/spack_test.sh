#!/usr/bin/env bash
# The Spack recipe, built for real: deploy/spack (a Spack package repository) installed by the
# Spack checkout that DLAUNCH_SPACK_ROOT names, the module Spack generates for it loaded through
# Lmod and through Environment Modules (Tcl) in a clean environment, and a 2-node x 2-rank job of a
# Python script run with `dlaunch run` from the Spack prefix.
#   DLAUNCH_SPACK_ROOT=<spack checkout> tests/install/spack_test.sh BUILD_DIR SOURCE_DIR
#
# Without DLAUNCH_SPACK_ROOT it is skipped (exit 77): the project cannot ship Spack, and Debian
# packages none. Everything is kept in a Spack environment under DLAUNCH_SPACK_WORK (default
# BUILD_DIR/spack-test) with its own user config and cache, so the user's ~/.spack is neither read
# nor written. The compilers come from `spack compiler find`; the heavy dependencies are Debian's
# packages (scripts/install-deps.sh build) declared as non-buildable externals: `spack external
# find` for those it can detect, pkg-config's and dpkg's versions for the rest. Spack builds only
# gcc-runtime and dlaunch itself (from a copy of SOURCE_DIR, `spack develop`). The install tree is
# kept between runs; the copy of the sources is refreshed, so dlaunch is rebuilt when they change.
# DLAUNCH_SPACK_JOBS sets Spack's build jobs (default 1).
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
if [ -z "${DLAUNCH_SPACK_ROOT:-}" ]; then
  echo "skipped: DLAUNCH_SPACK_ROOT does not name a Spack checkout (deploy/README.md, \"Spack\")"
  exit 77
fi
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $* ($SECONDS s)"; }
[ -r "$DLAUNCH_SPACK_ROOT/share/spack/setup-env.sh" ] || fail "$DLAUNCH_SPACK_ROOT is no Spack checkout"

work=${DLAUNCH_SPACK_WORK:-$build/spack-test}
mkdir -p "$work"
work=$(cd "$work" && pwd)
export SPACK_USER_CONFIG_PATH=$work/user-config SPACK_USER_CACHE_PATH=$work/user-cache
export SPACK_DISABLE_LOCAL_CONFIG=1
# shellcheck disable=SC1091
. "$DLAUNCH_SPACK_ROOT/share/spack/setup-env.sh"
env=$work/env
sp() { spack -e "$env" "$@"; }

step "the sources, copied to $work/src"
rm -rf "$work/src"
mkdir -p "$work/src"
tar -C "$src" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$work/src" -xf -

step "the Spack environment $env"
version() { [ -n "$2" ] || fail "no version of $1 (scripts/install-deps.sh build)"; echo "$2"; }
boost=$(sed -n 's/^#define BOOST_LIB_VERSION "\([0-9]*\)_\([0-9]*\)".*/\1.\2.0/p' /usr/include/boost/version.hpp 2>/dev/null || true)
mustache=$(dpkg-query -W -f '${Version}' libkainjow-mustache-dev 2>/dev/null | sed 's/[+-].*//' || true)
external() {  # name version [variants]: a non-buildable external under /usr
  printf '    %s:\n      buildable: false\n      externals:\n      - spec: %s@%s%s\n        prefix: /usr\n' \
    "$1" "$1" "$(version "$1" "$2")" "${3:-}"
}
mkdir -p "$env"
{
  cat <<EOF
spack:
  specs: [dlaunch@main]
  view: false
  concretizer: {unify: true, reuse: false}
  repos: [$src/deploy/spack]
  config:
    install_tree: {root: $work/opt}
    build_stage: [$work/stage]
    build_jobs: ${DLAUNCH_SPACK_JOBS:-1}
    ccache: $(command -v ccache >/dev/null && echo true || echo false)
  modules:
    default:
      roots: {tcl: $work/modules/tcl, lmod: $work/modules/lmod}
      enable: [tcl, lmod]
      lmod: {core_compilers: ['gcc@=$(gcc -dumpfullversion)'], hierarchy: []}
  packages:
    all: {providers: {zlib-api: [zlib]}}
EOF
  external grpc "$(pkg-config --modversion grpc++ 2>/dev/null || true)"
  external protobuf "$(pkg-config --modversion protobuf 2>/dev/null || true)"
  external abseil-cpp "$(pkg-config --modversion absl_base 2>/dev/null || true)"
  external yaml-cpp "$(pkg-config --modversion yaml-cpp 2>/dev/null || true)"
  external zlib "$(pkg-config --modversion zlib 2>/dev/null || true)"
  external googletest "$(pkg-config --modversion gtest 2>/dev/null || true)" +gmock
  external boost "$boost"
  external kainjow-mustache "$mustache"
} >"$env/spack.yaml"
rm -f "$env/spack.lock"
sp compiler find >/dev/null
sp external find --not-buildable cmake pkgconf openssl hwloc gmake >/dev/null
sp develop --no-clone --path "$work/src" dlaunch@main >/dev/null
grep -q "spec: hwloc@" "$env/spack.yaml" || fail "spack external find found no hwloc"

step "spack concretize"
sp concretize -f | tee "$work/concretize.txt" | grep -E '^( -|\[[e+]\]) ' || true
built=$(awk '$1 == "-" { for (i = 2; i <= NF; i++) if ($i ~ /@/) {
  n = $i; sub(/^\^/, "", n); sub(/@.*/, "", n); print n; break } }' "$work/concretize.txt" | sort -u | xargs)
echo "built by Spack: $built"
[ "$built" = "dlaunch gcc-runtime" ] || [ -z "$built" ] ||
  fail "Spack would build more than dlaunch and gcc-runtime: $built"

step "spack install"
sp install --fail-fast >"$work/install.log" 2>&1 || { tail -n 60 "$work/install.log"; fail "spack install"; }
tail -n 3 "$work/install.log"
prefix=$(sp location -i dlaunch)
for f in bin/dlaunch bin/dlaunch-agent bin/dlaunch-relay share/dlaunch/templates/pbs.sh.mustache; do
  [ -e "$prefix/$f" ] || fail "the Spack install has no $f"
done
sp module tcl refresh -y >/dev/null
sp module lmod refresh -y >/dev/null

step "module load dlaunch, then a 2 x 2 job of a Python script"
jobs=$work/jobs
rm -rf "$jobs"
mkdir -p "$jobs" "$work/home"
# Each rank records its world and the executables of its agent (its parent) and launcher.
cat >"$jobs/probe.py" <<'EOF'
import os
agent = os.readlink(f"/proc/{os.getppid()}/exe")
with open(f"/proc/{os.getppid()}/stat") as f:
    launcher = os.readlink(f"/proc/{f.read().rsplit(')', 1)[1].split()[1]}/exe")
with open(os.path.join(os.environ["DLAUNCH_JOB_DIR"], f"probe-{os.environ['RANK']}.txt"), "w") as f:
    f.write(f"{os.environ['WORLD_SIZE']} {agent} {launcher}\n")
EOF
cat >"$jobs/session.sh" <<'EOF'
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
prefix=$1 modules=$2 jobs=$3
if command -v dlaunch >/dev/null; then fail "dlaunch is on PATH before module load"; fi
module use "$modules"
module load dlaunch
[ "$(command -v dlaunch)" = "$prefix/bin/dlaunch" ] || fail "dlaunch on PATH is '$(command -v dlaunch)', not $prefix/bin/dlaunch"
case ":${DLAUNCH_SITE_PATH:-}:" in *":$prefix/etc/dlaunch/sites:"*) ;; *) fail "DLAUNCH_SITE_PATH is '${DLAUNCH_SITE_PATH:-}'";; esac
cd "$jobs"
dlaunch run --nnodes 2 --nproc-per-node 2 --job-dir "runs/$4" probe.py || fail "dlaunch run exited $?"
module unload dlaunch
if command -v dlaunch >/dev/null; then fail "dlaunch still on PATH after module unload"; fi
EOF
check_job() {
  grep -q '"result":"succeeded"' "$jobs/runs/$1/summary.json" 2>/dev/null ||
    fail "$1: summary.json does not say succeeded: $(cat "$jobs/runs/$1/summary.json" 2>&1)"
  for r in 0 1 2 3; do
    [ "$(cat "$jobs/runs/$1/probe-$r.txt" 2>&1)" = "4 $prefix/bin/dlaunch-agent $prefix/bin/dlaunch" ] ||
      fail "$1: rank $r ran as '$(cat "$jobs/runs/$1/probe-$r.txt" 2>&1)'"
  done
}
clean_env=(env -i HOME="$work/home" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 TERM=dumb)

lmod_init=/usr/share/lmod/lmod/init/bash
[ -r $lmod_init ] || fail "no Lmod ($lmod_init): scripts/install-deps.sh test installs it"
"${clean_env[@]}" bash --noprofile --norc -c ". $lmod_init && . $jobs/session.sh \"\$@\"" session \
  "$prefix" "$(find "$work/modules/lmod" -type d -name Core | head -n 1)" "$jobs" lmod || fail "the Lmod session"
check_job lmod

modulecmd=$(BUILD_DIR="$build" "$src/scripts/environment-modules.sh" "$build/environment-modules")
"${clean_env[@]}" bash --noprofile --norc -c \
  "module() { eval \"\$(tclsh $modulecmd bash \"\$@\")\"; } && . $jobs/session.sh \"\$@\"" session \
  "$prefix" "$work/modules/tcl/$(sp arch)" "$jobs" tcl || fail "the Environment Modules session"
check_job tcl
step "passed"
