#!/usr/bin/env bash
# 2 CNN ranks on one node with the agent started by Open MPI's mpirun, as the ThetaGPU script
# starts it: "before" = mpirun's default binding (one core for the agent) and cpus.binding: none,
# so both workers inherit that core; "after" = dlaunch's own mpirun line (--bind-to none) and the
# default placement (each rank on its own cores). Optional: torchrun under the same mpirun line.
# Runs are interleaved; prints samples/s of each run and the medians.
#   bench/placement/run.sh [--reps 3] [--steps 60] [--torchrun] [--kinds before,after,torchrun]
#                          [--bin build/bin]
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=3 steps=60 torchrun=0 bin=build/bin kinds_flag=
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --torchrun) torchrun=1; shift ;;
    --kinds) kinds_flag=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
# Open MPI refuses root unless told; harmless otherwise.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'command: [x]\ncpus: {binding: none}\n' > "$tmp/unpinned.yaml"
worker=("$PWD/$bin/dlaunch-worker" --model cnn --dataset fashion-mnist --steps "$steps")

samples() {  # summary json -> samples/s total
  sed -n 's/.*"samples_per_sec_total": *\([0-9.]*\).*/\1/p' "$1"
}

run_one() {  # kind rep
  local kind=$1 rep=$2 out="$tmp/$1-$2.json"
  case "$kind" in
    before)
      "$bin/dlaunch" run "$tmp/unpinned.yaml" --nnodes 1 --nproc-per-node 2 --launcher mpirun \
        --launcher-cmd "mpirun -n 1 -npernode 1" --job-root "$tmp/runs" \
        -- "${worker[@]}" --summary-json "$out" ;;
    after)
      "$bin/dlaunch" run --nnodes 1 --nproc-per-node 2 --launcher mpirun --job-root "$tmp/runs" \
        -- "${worker[@]}" --summary-json "$out" ;;
    torchrun)
      mpirun -n 1 -npernode 1 /usr/bin/python3 -m torch.distributed.run --standalone \
        --nproc_per_node=2 --redirects=9:0 --tee=9:0 --no_python \
        "${worker[@]}" --summary-json "$out" ;;
  esac >"$tmp/$kind-$rep.log" 2>&1 || { echo "$kind run $rep failed:" >&2; tail -20 "$tmp/$kind-$rep.log" >&2; exit 1; }
  samples "$out"
}

kinds=(before after)
[ "$torchrun" = 1 ] && kinds+=(torchrun)
[ -n "$kinds_flag" ] && IFS=, read -r -a kinds <<< "$kinds_flag"
declare -A all
for rep in $(seq 1 "$reps"); do
  for kind in "${kinds[@]}"; do
    s=$(run_one "$kind" "$rep")
    echo "$kind run $rep: $s samples/s" >&2
    all[$kind]+="$s "
  done
done
echo "| launch | samples/s per run | median |"
echo "|---|---|---:|"
for kind in "${kinds[@]}"; do
  median=$(printf '%s\n' ${all[$kind]} | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}')
  echo "| $kind | ${all[$kind]}| $median |"
done
