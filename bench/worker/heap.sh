#!/usr/bin/env bash
# dlaunch-worker's heap policy, side by side: `dlaunch run` of the CNN on Fashion-MNIST, 1 node x
# PROCS ranks (each pinned to its own core by dlaunch), STEPS steps, alternating the default
# (freed memory kept in the heap, docs/worker.md "Memory") and DLAUNCH_WORKER_HEAP=system
# (glibc's defaults). Prints per run the job's samples/s and each rank's minor page faults per
# step (the whole process's, start-up included, from /usr/bin/time), then the medians. The
# default 600 steps at 2 ranks pass the end of the first epoch (468 steps) and its test-set
# evaluation, after which the Fashion-MNIST study saw rank 0's page faults begin.
#
#   bench/worker/heap.sh                REPS=3 STEPS=600 PROCS=2 BUILD_DIR=build
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build}
DLAUNCH=${DLAUNCH:-$BUILD_DIR/bin/dlaunch}
REPS=${REPS:-3}
STEPS=${STEPS:-600}
PROCS=${PROCS:-2}
OUT=${OUT:-$(mktemp -d /tmp/dlaunch-heap-bench.XXXXXX)}
[ -x "$DLAUNCH" ] || { echo "heap.sh: $DLAUNCH not built" >&2; exit 2; }

# The worker under /usr/bin/time, which prints its minor faults (%R) when it exits.
cat >"$OUT/job.yaml" <<YAML
name: heap-bench
nodes: 1
nproc_per_node: $PROCS
launcher: local
command: [/usr/bin/time, -f, "minor_faults %R", dlaunch-worker, --model, cnn, --steps, $STEPS,
          --batch-size, 64, --report-every, 50]
YAML
# dlaunch resolves the bare dlaunch-worker next to itself; /usr/bin/time needs it on PATH.
export PATH="$(cd "$(dirname "$DLAUNCH")" && pwd):$PATH"

printf '| run | heap | samples/s | faults/step per rank |\n|---:|---|---:|---|\n'
for ((i = 1; i <= REPS; i++)); do
  for heap in keep system; do
    dir="$OUT/$heap-$i"
    if [ "$heap" = system ]; then env_args=(DLAUNCH_WORKER_HEAP=system); else env_args=(); fi
    env "${env_args[@]}" "$DLAUNCH" run "$OUT/job.yaml" --job-dir "$dir" >"$dir.out" 2>&1 ||
      { echo "heap.sh: run $dir failed; see $dir.out" >&2; exit 1; }
    sps=$(python3 -c 'import json,sys; print("%.1f" % json.load(open(sys.argv[1]))["samples_per_sec"])' "$dir/summary.json")
    faults=$(for f in "$dir"/logs/rank-*.log; do
               awk -v s="$STEPS" '/^minor_faults/ {printf "%.0f ", $2 / s}' "$f"; done)
    printf '| %d | %s | %s | %s|\n' "$i" "$heap" "$sps" "$faults"
    echo "$heap $sps" >>"$OUT/samples"
  done
done
python3 - "$OUT/samples" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {h: statistics.median(float(s) for k, s in rows if k == h) for h in ("keep", "system")}
print(f"\nmedian samples/s: keep {med['keep']:.1f}, system {med['system']:.1f}, "
      f"ratio {med['keep'] / med['system']:.2f}")
PY
