#!/usr/bin/env bash
# The GPU path on a real GPU machine, through `dlaunch run` (launcher, agent, worker), in one
# call: GPU discovery and NVML samples, NCCL, bf16 autocast and fp16 with loss scaling on
# Fashion-MNIST, a rank killed mid-run restarted and resumed from its checkpoint on the GPU, an
# isolated binding, and ResNet throughput of dlaunch-worker against torchvision's ResNet under
# Python DDP (eager, channels-last, torch.compile), bf16, synthetic 224x224 images.
#
# Runs from the repository root on a machine whose python3 has a CUDA PyTorch (LibTorch and NCCL
# come from it) with the folder bench/gpu/bundle.sh made here (default .gpu). Writes a table to
# stdout and to $OUT/table.md, and the job directories' records to $OUT/jobs.tgz.
#   bench/gpu/device_check.sh [BUNDLE]
# SECTIONS picks the sections to run (default 123456); RESNET_BATCHES the ResNet batch sizes of
# section 5 (default 256; the first is also the one Python DDP eager without channels-last and
# ResNet-34 run at).
set -uo pipefail
cd "$(dirname "$0")/../.."
G=$(cd "${1:-.gpu}" && pwd)
OUT=${OUT:-$(mktemp -d)}
PY=${PY:-python3}
TORCH_LIB=$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export LD_LIBRARY_PATH="$G/lib:$TORCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$G/bin:$PATH" PYTHONUNBUFFERED=1
JOBS=$OUT/jobs-work
mkdir -p "$JOBS"
TABLE=$OUT/table.md
NPROC=gpu

note() { echo "$*" | tee -a "$TABLE"; }
note "# GPU check, $(date -u +%FT%TZ)"
note "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
note "- PyTorch: $("$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())))')"
missing=$(for b in "$G"/bin/*; do ldd "$b"; done | grep -c "not found")
note "- libraries not found by the loader: $missing"
[ "$missing" = 0 ] || { for b in "$G"/bin/*; do ldd "$b" | grep "not found"; done; }

# job NAME SECONDS EXTRA_YAML -- COMMAND...: a dlaunch run of COMMAND, 1 node.
job() {
  local name=$1 limit=$2 extra=$3
  shift 4
  local dir=$JOBS/$name yaml=$JOBS/$name.yaml start rc
  printf 'name: %s\nnodes: 1\nnproc_per_node: %s\nlauncher: local\n%s\ncommand: [' \
    "$name" "$NPROC" "$extra" >"$yaml"
  local first=1
  for a in "$@"; do
    [ $first = 1 ] || printf ', ' >>"$yaml"
    printf "'%s'" "${a//\'/\'\'}" >>"$yaml"  # a YAML single-quoted scalar
    first=0
  done
  printf ']\n' >>"$yaml"
  start=$(date +%s%N)
  timeout "$limit" dlaunch run "$yaml" --job-dir "$dir" >"$JOBS/$name.out" 2>&1
  rc=$?
  echo "$name rc=$rc $(( ($(date +%s%N) - start) / 1000000 )) ms" >>"$JOBS/times.txt"
  return $rc
}

summary() {  # FILE KEY...: values of KEYs in a JSON file
  "$PY" - "$@" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"(no summary: {e})"); sys.exit()
print(" ".join(f"{k}={d.get(k)}" for k in sys.argv[2:]))
PY
}

DATA=(--dataset fashion-mnist --data-dir "$G/data")
# DEVICE=cpu AMP=off: a dry run of sections 1-4 on a machine without a GPU.
W=(dlaunch-worker --device "${DEVICE:-cuda}" --report-every "${REPORT_EVERY:-20}")
BF16=${AMP:-bf16}
# DRY_RUN=1: short runs, and nothing past section 4.
if [ "${DRY_RUN:-0}" = 1 ]; then LEN=(--steps 30); KILL=(--steps 60 --checkpoint-every 10 --fail-at-step 30)
else LEN=(--epochs 1); KILL=(--steps 600 --checkpoint-every 100 --fail-at-step 300); fi
FP16=${AMP:-fp16}

want() { [[ "${SECTIONS:-123456}" == *"$1"* ]]; }
# What PyTorch 2.x prints at exit when a process group was never destroyed.
unclean_exits() { grep -h -c "destroy_process_group" "$@" 2>/dev/null | awk '{s+=$1} END {print s+0}'; }

if want 1; then
note ""
note "## 1. CNN, Fashion-MNIST, 1 epoch, bf16 autocast (nproc_per_node: gpu)"
if ! job cnn-bf16 120 "" -- "${W[@]}" --model cnn "${DATA[@]}" "${LEN[@]}" --batch-size 128 \
     --amp "$BF16" --summary-json "$JOBS/cnn-bf16.worker.json"; then
  note "- failed with nproc_per_node: gpu (see cnn-bf16.out); the rest use nproc_per_node: 1"
  NPROC=1
fi
tail -4 "$JOBS/cnn-bf16.out" | tee -a "$TABLE"
note "- worker: $(summary "$JOBS/cnn-bf16.worker.json" final_loss test_accuracy samples_per_sec_total backend amp)"
note "- NVML samples in the journal: $(grep -c '"gpus"' "$JOBS/cnn-bf16/metrics.jsonl" "$JOBS/cnn-bf16/events.jsonl" 2>/dev/null | tr '\n' ' ')"
grep -h -o '"gpus":\[[^]]*\]' "$JOBS"/cnn-bf16/*.jsonl 2>/dev/null | tail -1 | cut -c1-400 | tee -a "$TABLE"
note "- 'destroy_process_group' warnings in the job's output and logs: $(unclean_exits "$JOBS/cnn-bf16.out" "$JOBS"/cnn-bf16/logs/*)"
fi

if want 2; then
note ""
note "## 2. CNN, Fashion-MNIST, 1 epoch, fp16 with dynamic loss scaling"
job cnn-fp16 120 "" -- "${W[@]}" --model cnn "${DATA[@]}" "${LEN[@]}" --batch-size 128 --amp "$FP16" \
  --summary-json "$JOBS/cnn-fp16.worker.json"
tail -3 "$JOBS/cnn-fp16.out" | tee -a "$TABLE"
note "- worker: $(summary "$JOBS/cnn-fp16.worker.json" final_loss test_accuracy samples_per_sec_total amp)"
fi

if want 3; then
note ""
note "## 3. Rank killed at step 300 (checkpoint every 100), restarted, resumed on the GPU"
job restart 150 "max_restarts: 1" -- "${W[@]}" --model cnn "${DATA[@]}" "${KILL[@]}" --batch-size 128 \
  --amp "$BF16" --checkpoint-dir "$JOBS/restart-ckpt" \
  --summary-json "$JOBS/restart.worker.json"
tail -4 "$JOBS/restart.out" | tee -a "$TABLE"
grep -h -i -E "restart|resum|round" "$JOBS/restart.out" | head -8 | tee -a "$TABLE"
note "- worker: $(summary "$JOBS/restart.worker.json" start_step steps final_loss test_accuracy)"
note "- 'destroy_process_group' warnings: $(unclean_exits "$JOBS/restart.out" "$JOBS"/restart/logs/*)"
fi

if want 4; then
note ""
note "## 4. Isolated binding: what the rank sees"
job isolate 60 $'gpus:\n  binding: isolate' -- bash -c \
  'echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES LOCAL_RANK=$LOCAL_RANK"; nvidia-smi -L'
grep -h -E "CUDA_VISIBLE|GPU 0" "$JOBS/isolate.out" | head -3 | tee -a "$TABLE"
grep -h -E "CUDA_VISIBLE|GPU " "$JOBS"/isolate/logs/* 2>/dev/null | head -3 | tee -a "$TABLE"
fi

[ "${DRY_RUN:-0}" = 1 ] && exit 0
if want 5; then
note ""
note "## 5. ResNet throughput, bf16, synthetic 3x224x224, 1 rank under dlaunch run"
note "| model | batch | implementation | samples/s | first step done (s from start) |"
note "|---|---:|---|---:|---:|"
resnet() {  # NAME MODEL BATCH IMPL ARGS...
  local name=$1 model=$2 batch=$3 impl=$4
  shift 4
  job "$name" 240 "" -- "$@" --summary-json "$JOBS/$name.worker.json" || true
  local line
  line=$(summary "$JOBS/$name.worker.json" samples_per_sec_total time_to_first_step_s)
  note "| $model | $batch | $impl | $line |"
}
read -r -a BATCHES <<<"${RESNET_BATCHES:-256}"
# nvidia-smi's own utilisation beside the agent's NVML samples in the journals.
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,power.draw --format=csv,noheader \
  -lms 500 >"$JOBS/nvidia-smi.csv" 2>&1 &
SMI=$!
for m in resnet50 resnet34; do
  for b in "${BATCHES[@]}"; do
    SYN=(--model "$m" --dataset synthetic --image-shape 3,224,224 --synthetic-samples 10240
         --steps 40 --batch-size "$b" --amp bf16 --no-eval)
    PYB=(bench/gpu/resnet_ddp.py --model "$m" --steps 40 --batch-size "$b")
    first=0; [ "$b" = "${BATCHES[0]}" ] && first=1
    [ $first = 1 ] && resnet "$m-cpp-$b" "$m" "$b" dlaunch-worker "${W[@]}" "${SYN[@]}"
    resnet "$m-cpp-cl-$b" "$m" "$b" "dlaunch-worker, channels-last" "${W[@]}" "${SYN[@]}" \
      --channels-last
    [ "$m" = resnet50 ] && [ $first = 1 ] &&
      resnet "$m-py-$b" "$m" "$b" "Python DDP eager" "$PY" "${PYB[@]}"
    resnet "$m-py-cl-$b" "$m" "$b" "Python DDP eager, channels-last" "$PY" "${PYB[@]}" --channels-last
  done
  [ "${RESNET34:-1}" = 1 ] || break
done
[ "${COMPILE:-1}" = 1 ] &&
  resnet resnet50-py-compiled resnet50 "${BATCHES[0]}" "Python DDP torch.compile, channels-last" \
    "$PY" bench/gpu/resnet_ddp.py --model resnet50 --steps 40 --batch-size "${BATCHES[0]}" \
    --channels-last --compile
kill $SMI 2>/dev/null
note ""
smi_max=$(cut -d, -f2 "$JOBS/nvidia-smi.csv" | tr -dc '0-9\n' | sort -n | tail -1)
HOST_LINES=("$JOBS"/resnet*/metrics.jsonl "$JOBS"/resnet*/events.jsonl)
nvml_max=$(grep -h -o '"utilization_pct":[0-9]*' "${HOST_LINES[@]}" 2>/dev/null | cut -d: -f2 |
  sort -n | tail -1)
nvml_lines=$(grep -h -c '"gpus":\[{' "${HOST_LINES[@]}" 2>/dev/null | awk '{s+=$1} END {print s+0}')
note "- nvidia-smi while section 5 ran: highest utilization.gpu $smi_max % in" \
  "$(wc -l <"$JOBS/nvidia-smi.csv") samples"
note "- the agent's NVML samples in the same jobs: highest utilization_pct $nvml_max, in" \
  "$nvml_lines lines"
note "- 'destroy_process_group' warnings in section 5's dlaunch-worker jobs: $(unclean_exits "$JOBS"/resnet*-cpp*.out)"
fi

if want 6; then
note ""
note "## 6. On this machine's CPUs: dlaunch-worker against Python DDP, eager and compiled, 2 ranks"
if [ "${CPU_BENCH:-1}" = 1 ]; then
  WORKER="$G/bin/dlaunch-worker" PY="$PY" IMPLS="cpp py pyc" WORLDS=2 REPS=${CPU_REPS:-3} \
    OUT="$JOBS/cpu-bench" timeout "${CPU_BENCH_S:-240}" bench/worker/run.sh 2>"$JOBS/cpu-bench.err" |
    tee -a "$TABLE"
fi
fi

note ""
note "## Job wall times"
cat "$JOBS/times.txt" | tee -a "$TABLE"
tar czf "$OUT/jobs.tgz" -C "$JOBS" --exclude='*.ckpt' --exclude='restart-ckpt' . 2>/dev/null
ls -la "$OUT"
