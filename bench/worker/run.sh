#!/usr/bin/env bash
# dlaunch-worker vs Python DDP (Debian python3-torch by default), side by side on this machine:
# samples/s of the CNN and the MLP at 1 and 2 ranks (batch 64 per rank, one thread per rank,
# SGD with momentum, Gloo on loopback, synthetic 1x28x28 data), time from process start to the
# end of the first training step, and 2-rank scaling efficiency. Runs are interleaved
# (C++, Python, C++, ...) so background load hits both alike; the table shows medians.
#
#   bench/worker/run.sh                 REPS=5 CNN_STEPS=40 MLP_STEPS=300 BUILD_DIR=build
#
# On PyTorch 2.x, with the worker built on the same LibTorch and Python DDP also compiled:
#   BUILD_DIR=build-torch2 PY=build-compare/venv/bin/python IMPLS="cpp py pyc" WORLDS=2 \
#     bench/worker/run.sh
# IMPLS: cpp (dlaunch-worker), py (Python DDP, eager), pyc (Python DDP under torch.compile).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build}
WORKER=${WORKER:-$BUILD_DIR/bin/dlaunch-worker}
PY=${PY:-/usr/bin/python3}
REPS=${REPS:-5}
CNN_STEPS=${CNN_STEPS:-40}
MLP_STEPS=${MLP_STEPS:-300}
IMPLS=${IMPLS:-cpp py}
WORLDS=${WORLDS:-1 2}
OUT=${OUT:-$(mktemp -d /tmp/dlaunch-worker-bench.XXXXXX)}
mkdir -p "$OUT"
[ -x "$WORKER" ] || { echo "run.sh: $WORKER not built (cmake --build $BUILD_DIR --target dlaunch-worker)" >&2; exit 2; }
"$PY" -c 'import torch' 2>/dev/null || { echo "run.sh: $PY cannot import torch (apt-get install python3-torch)" >&2; exit 2; }

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run IMPL MODEL WORLD STEPS SUMMARY
run() {
  local impl=$1 model=$2 world=$3 steps=$4 summary=$5 port pids=()
  port=$(free_port)
  for ((r = 0; r < world; r++)); do
    if [ "$impl" = cpp ]; then
      cmd=("$WORKER" --model "$model" --dataset synthetic --steps "$steps" --batch-size 64
           --lr 0.01 --no-eval --report-every 100000 --device cpu --summary-json "$summary")
    else
      cmd=("$PY" bench/worker/ddp_reference.py --model "$model" --steps "$steps" --batch-size 64
           --lr 0.01 --summary-json "$summary")
      [ "$impl" = pyc ] && cmd+=(--compile)
    fi
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=$world MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      OMP_NUM_THREADS=1 timeout "${RUN_TIMEOUT:-900}" "${cmd[@]}" >"$OUT/log.$impl.$model.$world.$r" 2>&1 &
    pids+=($!)
  done
  local failed=0
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  # A hung or failed run costs its sample, not the whole study (summary JSONs are per run).
  [ $failed = 0 ] || echo "run.sh: $impl $model x$world failed or timed out, logs $OUT/log.$impl.$model.$world.*" >&2
}

echo "results in $OUT" >&2
for ((rep = 1; rep <= REPS; rep++)); do
  for model in cnn mlp; do
    steps=$CNN_STEPS; [ "$model" = mlp ] && steps=$MLP_STEPS
    for world in $WORLDS; do
      for impl in $IMPLS; do
        echo "rep $rep/$REPS $impl $model x$world" >&2
        run "$impl" "$model" "$world" "$steps" "$OUT/$impl.$model.$world.$rep.json"
      done
    done
  done
done

"$PY" - "$OUT" "$IMPLS" "$WORLDS" <<'PYEOF'
import glob, json, statistics, sys
out, impls, worlds = sys.argv[1], sys.argv[2].split(), [int(w) for w in sys.argv[3].split()]
names = {"cpp": "dlaunch-worker", "py": "Python DDP", "pyc": "Python DDP compiled"}
def med(impl, model, world, key):
    vals = [json.load(open(f))[key] for f in sorted(glob.glob(f"{out}/{impl}.{model}.{world}.*.json"))]
    return (statistics.median(vals), len(vals)) if vals else (float("nan"), 0)
print("| model | ranks | implementation | runs | samples/s (median) | vs dlaunch-worker | "
      "first step done, s from start |")
print("|---|---:|---|---:|---:|---:|---:|")
totals = {}
for model in ("cnn", "mlp"):
    for world in worlds:
        base, _ = med("cpp", model, world, "samples_per_sec_total") if "cpp" in impls else (None, 0)
        for impl in impls:
            sps, n = med(impl, model, world, "samples_per_sec_total")
            first, _ = med(impl, model, world, "time_to_first_step_s")
            totals[(impl, model, world)] = sps
            ratio = f"{sps / base:.2f}" if base else "-"
            print(f"| {model} | {world} | {names[impl]} | {n} | {sps:.1f} | {ratio} | {first:.2f} |")
if 1 in worlds and 2 in worlds:
    print("\n2-rank scaling efficiency (total samples/s at 2 ranks / (2 x 1 rank)), medians:")
    for model in ("cnn", "mlp"):
        line = "   ".join(f"{names[i]} {100 * totals[(i, model, 2)] / (2 * totals[(i, model, 1)]):.0f}%"
                           for i in impls)
        print(f"  {model}: {line}")
PYEOF
