#!/usr/bin/env bash
# Builds the libFuzzer variant of the fuzz targets (clang, ASan + UBSan, its own build folder)
# and runs each target in turn, one at a time, on a copy of its seed corpus. Prints one line per
# target: executions, seconds, coverage, corpus size, and whether it found anything.
#   scripts/fuzz.sh [--time=SECONDS] [--runs=N] [--build-dir=DIR] [TARGET...]
# Defaults: 60 s per target, build-fuzz, every target (tests/fuzz/CMakeLists.txt lists them).
# Given both, a target stops at whichever limit comes first (--runs=10000000 --time=3600).
# What a target finds (crash-*, leak-*, timeout-*, oom-*) is left in DIR/findings/TARGET/.
# The corpus a run grows stays in DIR/corpus/TARGET; copy the inputs worth keeping into
# tests/fuzz/corpus/TARGET by hand (libFuzzer's -merge=1 keeps the ones adding coverage).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-fuzz"
time_limit=(-max_total_time=60)
runs_limit=()
targets=()
for arg in "$@"; do
  case "$arg" in
    --time=*) given_time=1; time_limit=(-max_total_time="${arg#--time=}") ;;
    --runs=*) runs_limit=(-runs="${arg#--runs=}"); [ "${given_time:-}" ] || time_limit=() ;;
    --build-dir=*) build="${arg#--build-dir=}" ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown flag $arg" >&2; exit 2 ;;
    *) targets+=("$arg") ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  # The list in tests/fuzz/CMakeLists.txt: set(DLAUNCH_FUZZ_TARGETS a b ...).
  mapfile -t targets < <(sed -n '/^set(DLAUNCH_FUZZ_TARGETS/,/)/p' \
    "$root/tests/fuzz/CMakeLists.txt" | tr ' ()' '\n\n\n' | grep -E '^[a-z_]+$' | grep -v '^set$')
fi

if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found (scripts/install-deps.sh fuzz)" >&2
  exit 3
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++ -DDLAUNCH_FUZZ=ON -DDLAUNCH_BUILD_WORKER=OFF \
    "${launcher[@]}" >/dev/null
fi
cmake --build "$build" --target "${targets[@]/#/fuzz_}" -- -j"${FUZZ_BUILD_JOBS:-2}"

# Leaks are checked at exit by ASan; a slow input (over 10 s) or one that grows memory past
# 2 GB is a finding too.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
printf '%-18s %12s %8s %8s %8s %7s  %s\n' target executions seconds cov features corpus result
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  findings="$build/findings/$t"
  mkdir -p "$corpus" "$findings"
  cp -n "$root/tests/fuzz/corpus/$t"/* "$corpus/" 2>/dev/null || true
  log="$build/findings/$t.log"
  start=$(date +%s)
  rc=0
  "$build/tests/fuzz/fuzz_$t" "${time_limit[@]}" "${runs_limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$findings/" "$corpus" >"$log" 2>&1 || rc=$?
  secs=$(( $(date +%s) - start ))
  # A target that fails on its seeds prints no coverage: "?" then, not an exit of this script.
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)
  cov=$(grep -aoE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
  ft=$(grep -aoE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
  result=ok
  if [ "$rc" -ne 0 ]; then
    result="FOUND (exit $rc): $(ls "$findings" | head -3 | tr '\n' ' ')see $log"
    status=1
  fi
  printf '%-18s %12s %8s %8s %8s %7s  %s\n' "$t" "${execs:-?}" "$secs" "${cov:-?}" "${ft:-?}" \
    "$(ls "$corpus" | wc -l)" "$result"
done
exit $status
