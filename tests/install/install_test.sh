#!/usr/bin/env bash
# The install, proven: `cmake --install` of the build into a fresh prefix, `module load dlaunch`
# through Lmod and through Environment Modules (Tcl) in a clean environment, and `dlaunch run`
# of jobs from that prefix. Every check is on the installed tree; the build tree is never on PATH.
#   tests/install/install_test.sh BUILD_DIR SOURCE_DIR
#
# Default (quick): on this machine, in `env -i` shells. Lmod is Debian's (scripts/install-deps.sh
# test); the Tcl module command is Debian's environment-modules unpacked beside the build
# (scripts/environment-modules.sh), because the two Debian packages conflict. Each module system
# loads the module and runs a probe job (2 nodes x 1 rank) whose ranks record which dlaunch,
# dlaunch-agent and dlaunch-worker they ran under; Lmod also runs the demo job
# (share/dlaunch/examples/local.yaml, 10 steps instead of 200, no test-set pass).
#
# DLAUNCH_INSTALL_TEST=full adds the same in two fresh minimal Debian chroots, one with lmod and
# one with environment-modules installed by apt: the prefix bind-mounted read-only at
# /opt/dlaunch, run as nobody from a login shell, with only the runtime packages that ldd finds
# for the installed binaries (plus dataset-fashion-mnist for the demo). There the Lmod chroot runs
# the demo job unchanged. Needs root and mmdebstrap (scripts/install-deps.sh test);
# the chroots are cached under $DLAUNCH_CHROOT_CACHE (default /var/cache/dlaunch/chroot), keyed
# by their package list.
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
variant=${DLAUNCH_INSTALL_TEST:-quick}
case "$variant" in quick|full) ;; *) echo "DLAUNCH_INSTALL_TEST must be quick or full" >&2; exit 2;; esac

fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $* ($SECONDS s)"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dlaunch-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"

step "cmake --install into a fresh prefix"
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
for f in bin/dlaunch bin/dlaunch-agent bin/dlaunch-relay share/modulefiles/dlaunch/0.1.0.lua \
         share/modulefiles/dlaunch/0.1.0 share/dlaunch/examples/local.yaml \
         share/dlaunch/templates/pbs.sh.mustache; do
  [ -e "$prefix/$f" ] || fail "the install has no $f"
done
[ -d "$prefix/etc/dlaunch/sites" ] || fail "the install has no etc/dlaunch/sites"
worker=no
[ -x "$prefix/bin/dlaunch-worker" ] && worker=yes
for b in "$prefix"/bin/*; do
  libs=$(ldd "$b") || fail "ldd $b"
  ! grep -q 'not found' <<<"$libs" || fail "$b: a library is not found: $libs"
  ! grep -qF "$build" <<<"$libs" || fail "$b loads libraries from the build tree"
done

# The jobs. The probe's ranks record the executables of their agent (their parent) and of the
# launcher (the agent's parent), and which dlaunch-worker PATH gives them.
jobs=$tmp/jobs
mkdir -p "$jobs"
cat >"$jobs/probe.yaml" <<'EOF'
name: install-probe
nodes: 2
nproc_per_node: 1
launcher: local
command: [sh, -c, 'p=$(cut -d" " -f4 /proc/$PPID/stat); printf "launcher=%s\nagent=%s\nworker=%s\n" "$(readlink /proc/$p/exe)" "$(readlink /proc/$PPID/exe)" "$(command -v dlaunch-worker || echo none)" > "$DLAUNCH_JOB_DIR/probe-$RANK.txt"']
EOF
demo=$prefix/share/dlaunch/examples/local.yaml
sed -e 's/--steps, 200,/--steps, 10,/' -e 's/--report-every, 20]/--report-every, 5, --no-eval]/' \
  "$demo" >"$jobs/demo-short.yaml"
grep -q -- '--steps, 10,' "$jobs/demo-short.yaml" && grep -q -- '--no-eval]' "$jobs/demo-short.yaml" ||
  fail "the demo job ($demo) no longer has '--steps, 200,' and '--report-every, 20]' to shorten"
cp "$demo" "$jobs/demo.yaml"

# One login session: load the module, check what it set, run the given jobs, unload.
# Arguments: prefix as the session sees it, the module file that must be the one loaded,
# the jobs folder as the session sees it, then the jobs.
cat >"$jobs/session.sh" <<'EOF'
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
prefix=$1 modulefile=$2 jobs=$3; shift 3
[ "$(type -t module)" = function ] || fail "no module command in this shell"
if command -v dlaunch >/dev/null; then fail "dlaunch is on PATH before module load"; fi
export DLAUNCH_SITE_PATH=/site/first
module use "$prefix/share/modulefiles"
module load dlaunch
[ "$(command -v dlaunch)" = "$prefix/bin/dlaunch" ] || fail "dlaunch on PATH is '$(command -v dlaunch)', not $prefix/bin/dlaunch"
[ "${DLAUNCH_ROOT:-}" = "$prefix" ] || fail "DLAUNCH_ROOT is '${DLAUNCH_ROOT:-}', not $prefix"
[ "$DLAUNCH_SITE_PATH" = "/site/first:$prefix/etc/dlaunch/sites" ] || fail "DLAUNCH_SITE_PATH is '$DLAUNCH_SITE_PATH'"
module show dlaunch >"$jobs/show.txt" 2>&1 || true
grep -qF "$modulefile" "$jobs/show.txt" || { cat "$jobs/show.txt"; fail "module show does not name $modulefile"; }
module list 2>&1 | grep -q 'dlaunch/0.1.0' || fail "module list does not list dlaunch/0.1.0"
cd "$jobs"
for job in "$@"; do
  echo "-- dlaunch run $job.yaml"
  rc=0
  dlaunch run "$job.yaml" --job-dir "runs/$job" || rc=$?
  [ "$rc" = 0 ] || fail "dlaunch run $job.yaml exited $rc"
done
module unload dlaunch
if command -v dlaunch >/dev/null; then fail "dlaunch still on PATH after module unload"; fi
[ -z "${DLAUNCH_ROOT:-}" ] || fail "DLAUNCH_ROOT still set after module unload"
[ "$DLAUNCH_SITE_PATH" = /site/first ] || fail "DLAUNCH_SITE_PATH is '$DLAUNCH_SITE_PATH' after module unload"
EOF

# Checks a session's job directories from outside: $1 jobs folder, $2 prefix as the session saw
# it, then the jobs run.
check_jobs() {
  local dir=$1 seen=$2 job r; shift 2
  for job in "$@"; do
    grep -q '"result":"succeeded"' "$dir/runs/$job/summary.json" 2>/dev/null ||
      fail "$job: summary.json does not say succeeded: $(cat "$dir/runs/$job/summary.json" 2>&1)"
  done
  for r in 0 1; do
    local probe=$dir/runs/probe/probe-$r.txt want
    want="launcher=$seen/bin/dlaunch
agent=$seen/bin/dlaunch-agent
worker=$( [ $worker = yes ] && echo "$seen/bin/dlaunch-worker" || echo none)"
    [ "$(cat "$probe" 2>&1)" = "$want" ] || fail "rank $r ran under
$(cat "$probe" 2>&1)
and not under
$want"
  done
  for job in "$@"; do
    [[ $job == demo* ]] || continue
    grep -q '"world_size":4' "$dir/runs/$job/summary.json" || fail "$job: not 4 ranks"
    grep -q '"samples":"[1-9]' "$dir/runs/$job/summary.json" || fail "$job: no samples reported"
  done
}

# A fresh copy of the jobs folder for one session.
session_dir() {
  rm -rf "$tmp/$1"
  cp -r "$jobs" "$tmp/$1"
  echo "$tmp/$1"
}

clean_env=(env -i HOME="$tmp/home" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 TERM=dumb)
mkdir -p "$tmp/home"
demo_jobs=()
[ $worker = yes ] && demo_jobs=(demo-short)

step "Lmod ($prefix)"
lmod_init=/usr/share/lmod/lmod/init/bash
[ -r $lmod_init ] || fail "no Lmod ($lmod_init): scripts/install-deps.sh test installs it"
dir=$(session_dir lmod)
"${clean_env[@]}" bash --noprofile --norc -c ". $lmod_init && . $dir/session.sh \"\$@\"" session \
  "$prefix" "$prefix/share/modulefiles/dlaunch/0.1.0.lua" "$dir" probe "${demo_jobs[@]}" ||
  fail "the Lmod session"
check_jobs "$dir" "$prefix" probe "${demo_jobs[@]}"

step "Environment Modules, Tcl ($prefix)"
modulecmd=$(BUILD_DIR="$build" "$src/scripts/environment-modules.sh" "$build/environment-modules")
dir=$(session_dir tcl)
"${clean_env[@]}" bash --noprofile --norc -c \
  "module() { eval \"\$(tclsh $modulecmd bash \"\$@\")\"; } && . $dir/session.sh \"\$@\"" session \
  "$prefix" "$prefix/share/modulefiles/dlaunch/0.1.0" "$dir" probe || fail "the Tcl modules session"
check_jobs "$dir" "$prefix" probe

step "Lmod reading the Tcl module file (a copy of the prefix without 0.1.0.lua)"
cp -al "$prefix" "$tmp/prefix-tcl"
rm "$tmp/prefix-tcl/share/modulefiles/dlaunch/0.1.0.lua"
dir=$(session_dir lmod-tcl)
"${clean_env[@]}" bash --noprofile --norc -c ". $lmod_init && . $dir/session.sh \"\$@\"" session \
  "$tmp/prefix-tcl" "$tmp/prefix-tcl/share/modulefiles/dlaunch/0.1.0" "$dir" probe ||
  fail "the Lmod session with the Tcl module file"
check_jobs "$dir" "$tmp/prefix-tcl" probe

if [ "$variant" = quick ]; then
  step "quick variant passed (DLAUNCH_INSTALL_TEST=full adds the Debian chroots)"
  exit 0
fi

. "$src/tests/install/chroot.sh"
[ "$(id -u)" = 0 ] || fail "DLAUNCH_INSTALL_TEST=full needs root (mmdebstrap, chroot, mounts)"
command -v mmdebstrap >/dev/null || fail "no mmdebstrap: scripts/install-deps.sh test"

step "runtime packages of the installed binaries"
runtime=$(runtime_packages "$prefix"/bin/*) || fail "runtime packages"
extra=()
[ $worker = yes ] && extra=(dataset-fashion-mnist)
echo "$runtime ${extra[*]}"

for flavour in lmod tcl; do
  if [ $flavour = lmod ]; then modules=lmod; else modules=environment-modules; fi
  step "chroot with $modules"
  root=$(cached_chroot $modules $runtime "${extra[@]}") || fail "building the $modules chroot"
  echo "$root"
  chroot_checks "$root" "$prefix" "$build"
  dir=$(session_dir chroot-$flavour)
  chown -R 65534:65534 "$dir"
  if [ $flavour = lmod ]; then
    file=/opt/dlaunch/share/modulefiles/dlaunch/0.1.0.lua
    run=(probe); [ $worker = yes ] && run+=(demo)
  else
    file=/opt/dlaunch/share/modulefiles/dlaunch/0.1.0
    run=(probe "${demo_jobs[@]}")
  fi
  run_in_chroot "$root" "$prefix" "$dir" bash -l /home/session/session.sh /opt/dlaunch "$file" /home/session "${run[@]}" ||
    fail "the $modules session in the chroot"
  check_jobs "$dir" /opt/dlaunch "${run[@]}"
done
step "full variant passed"
