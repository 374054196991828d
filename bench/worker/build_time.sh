#!/usr/bin/env bash
# What each LibTorch costs to compile: a clean build of dlaunch-worker's LibTorch translation
# units (dlaunch_worker_torch and main.cc) and its link, without ccache, in each build folder,
# one after the other, REPS times. The rest of the project is the same for both builds.
#
#   bench/worker/build_time.sh      REPS=1 DIRS="build build-torch2" JOBS=2
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${REPS:-1}
DIRS=${DIRS:-build build-torch2}
JOBS=${JOBS:-2}
export PATH=/usr/local/cuda/bin:$PATH
printf '| run | build | seconds |\n|---:|---|---:|\n'
for ((i = 1; i <= REPS; i++)); do
  for d in $DIRS; do
    [ -f "$d/build.ninja" ] || { echo "build_time.sh: $d is not configured" >&2; exit 2; }
    cmake --build "$d" --target dlaunch-worker -j "$JOBS" >/dev/null  # everything else up to date
    rm -f "$d"/worker/CMakeFiles/dlaunch_worker_torch.dir/*.o "$d"/worker/CMakeFiles/dlaunch-worker.dir/*.o
    start=$(date +%s%N)
    CCACHE_DISABLE=1 cmake --build "$d" --target dlaunch-worker -j "$JOBS" >/dev/null
    printf '| %d | %s | %d |\n' "$i" "$d" $(( ($(date +%s%N) - start) / 1000000000 ))
  done
done
