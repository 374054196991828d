# One user's session with a release of dlaunch (scripts/release-tarball.sh), as release_test.sh
# runs it: as a user who is not root, in a clean environment, on this machine or in a fresh
# chroot of an older Debian. Installs the release the way a user would, then runs what a user
# runs first. Every check prints FAIL and exits non-zero when it does not hold.
#   bash release_session.sh tarball|wheel ARTEFACT WORK
# ARTEFACT: the .tar.gz or the .whl. WORK: a folder the user owns (its HOME), holding the job
# scripts (release_job.py, stuck_rank.py); nothing outside it is written.
set -eu
kind=$1 artefact=$2 work=$3
fail() { echo "FAIL ($kind): $*" >&2; exit 1; }
step() { echo "-- $kind: $* ($SECONDS s)"; }
cd "$work"
[ "$(id -u)" != 0 ] || fail "the session runs as root"

step "install as $(id -un 2>/dev/null || id -u)"
if [ "$kind" = tarball ]; then
  mkdir -p opt && tar -xzf "$artefact" -C opt
  root=$(echo "$work"/opt/dlaunch-*)
  PATH=$root/bin:$PATH
else
  python3 -m venv venv
  venv/bin/pip install -q --no-index --disable-pip-version-check "$artefact"
  PATH=$work/venv/bin:$PATH
  root=$(venv/bin/python -c 'import dlaunch._cli as c, os; print(os.path.dirname(c._BIN))')
  venv/bin/python -c 'import dlaunch; assert dlaunch.__version__' || fail "import dlaunch"
fi
export PATH
if [ "$kind" = tarball ]; then want=$root/bin/dlaunch; else want=$work/venv/bin/dlaunch; fi
[ "$(command -v dlaunch)" = "$want" ] || fail "dlaunch on PATH is '$(command -v dlaunch)', not $want"
if command -v py-spy >/dev/null; then fail "py-spy is on PATH: the bundled one would not be proven"; fi
[ -z "${DLAUNCH_PY_SPY:-}" ] || fail "DLAUNCH_PY_SPY is set"
for b in "$root"/bin/*; do
  ! ldd "$b" | grep -q 'not found' || fail "$b: $(ldd "$b" | grep 'not found')"
done
dlaunch version || fail "dlaunch version"

step "a 2-node x 2-rank job of a Python script"
rc=0
dlaunch run --nnodes 2 --nproc-per-node 2 --join-timeout 60 --job-dir runs/two release_job.py >two.log 2>&1 || rc=$?
[ $rc = 0 ] || { cat two.log; fail "dlaunch run exited $rc"; }
grep -q '"result":"succeeded"' runs/two/summary.json && grep -q '"world_size":4' runs/two/summary.json ||
  fail "summary.json: $(cat runs/two/summary.json)"
for r in 0 1 2 3; do
  [ "$(cat "runs/two/rank-$r.txt" 2>&1)" = "rank $r of 4 on node $((r / 2))" ] ||
    fail "rank $r wrote '$(cat "runs/two/rank-$r.txt" 2>&1)'"
done
# The agents were the release's, started beside the launcher.
[ "$(cat runs/two/rank-0.exe)" = "agent=$root/bin/dlaunch-agent
launcher=$root/bin/dlaunch" ] || fail "rank 0 ran under $(cat runs/two/rank-0.exe)"

step "dlaunch doctor"
rc=0
dlaunch doctor --nnodes 2 --nproc-per-node 2 release_job.py >doctor.log 2>&1 || rc=$?
[ $rc = 0 ] || { cat doctor.log; fail "dlaunch doctor exited $rc"; }
grep -q '2 of 2 node(s) checked: 2 fit' doctor.log || { cat doctor.log; fail "doctor's table"; }

step "dlaunch script for Polaris"
dlaunch script "$root/share/dlaunch/examples/polaris.yaml" >polaris.pbs 2>script.err ||
  { cat script.err; fail "dlaunch script"; }
grep -q '^#PBS -l select=2:system=polaris' polaris.pbs || fail "no PBS select line: $(head polaris.pbs)"
grep -q "^exec $root/bin/dlaunch run " polaris.pbs || fail "the script does not exec $root/bin/dlaunch"

step "a hung rank's Python stack, through the bundled py-spy"
rc=0
dlaunch run --nnodes 1 --nproc-per-node 1 --stall-timeout 3 --heartbeat 1 --grace 2 \
  --job-dir runs/stall -- python3 stuck_rank.py stall >stall.log 2>&1 || rc=$?
[ $rc = 1 ] || { cat stall.log; fail "the stalled job exited $rc, not 1"; }
line=$(grep -n 'stuck here (stall)' stuck_rank.py | cut -d: -f1)
grep -q "root cause: stall: rank 0 .*, in wait_for_data ($work/stuck_rank.py:$line)" stall.log ||
  { cat stall.log; fail "the stall is not named with wait_for_data ($work/stuck_rank.py:$line)"; }
grep -q 'Python stacks of every thread, from py-spy' runs/stall/stacks/rank-0.txt ||
  fail "stacks/rank-0.txt is not py-spy's: $(head -5 runs/stall/stacks/rank-0.txt)"

step "Ctrl-C: SIGINT to the launcher's process group, nothing left behind"
set -m  # the job gets its own process group, as a terminal's foreground job, with SIGINT not ignored
dlaunch run --nnodes 2 --nproc-per-node 2 --job-dir runs/int release_job.py sleep >int.log 2>&1 &
pid=$!
set +m
for _ in $(seq 300); do
  [ "$(ls runs/int/rank-*.txt 2>/dev/null | wc -l)" = 4 ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
[ "$(ls runs/int/rank-*.txt 2>/dev/null | wc -l)" = 4 ] || { cat int.log; fail "the 4 ranks did not start"; }
kill -INT -- -$pid
rc=0
wait $pid || rc=$?
[ $rc = 130 ] || { cat int.log; fail "after SIGINT dlaunch exited $rc, not 130"; }
# dlaunch waits for its agents and they for their ranks: nothing may remain once it has exited.
left=$(for p in /proc/[0-9]*; do
  exe=$(readlink "$p/exe" 2>/dev/null || true)
  case $exe in "$root"/*) echo "${p#/proc/} $exe" ;; esac
  { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "DLAUNCH_JOB_DIR=$work/runs/int" && echo "${p#/proc/} rank"
done; true)
[ -z "$left" ] || fail "processes left after SIGINT: $left"
step "passed"
