#!/usr/bin/env bash
# Builds dlaunch without LibTorch under a sanitizer, in its own build folder, and runs the tests.
#   scripts/sanitize.sh asan [--pure] [ctest args...]   AddressSanitizer + UBSan (+ LeakSanitizer)
#   scripts/sanitize.sh tsan [--pure] [ctest args...]   ThreadSanitizer, unit and end-to-end tests
# asan runs every non-LibTorch test (all labels); tsan the pure unit suites and the process and
# end-to-end tests (gRPC, Asio and the agent's threads). --pure builds and runs only the pure unit
# suites (no processes, sockets or real time): the ctest label pure, whose binaries the target
# pure_tests builds (tests/CMakeLists.txt), as scripts/test.sh --pure does.
# Builds in build-asan/ or build-tsan/ (BUILD_DIR overrides), Ninja, line tables (-g1), frame
# pointers kept, ccache when installed. asan compiles at -O0: it halves the compile time of -O1
# and finds as much (every load and store is instrumented either way; optimising only removes
# some); CI runs `asan --pure` (.ci/run). tsan compiles at -O1, which its runtime and the timing
# of the threads it watches need. SANITIZE_OPT overrides either. Any report fails the test that
# made it (halt_on_error). tsan links abseil and gRPC built under TSan from Debian's sources of
# the installed versions (scripts/grpc-from-debian-source.sh tsan, built once and cached), so
# TSan sees their locks and completion queues. Suppressions: scripts/sanitize/<mode>.supp, each
# with its reason (docs/testing.md, "Sanitizers"); run_process_test checks that tsan's hide no
# planted race.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case "$mode" in
  asan) flags="-fsanitize=address,undefined -fno-sanitize-recover=all" opt="-O0 -g1" ;;
  # Asio's handler fences (std::atomic_thread_fence) are invisible to ThreadSanitizer (gcc warns
  # -Wtsan on each); its queues' mutexes, which TSan does see, order the handlers, so the TSan
  # build uses Asio's null fences: the same model, without the warnings. tsan_protobuf_abi.h
  # keeps protobuf's map fields laid out as in the uninstrumented libprotobuf (it says why).
  tsan) flags="-fsanitize=thread" opt="-O1 -g1"
    cflags="-DBOOST_ASIO_DISABLE_FENCED_BLOCK -include $PWD/scripts/sanitize/tsan_protobuf_abi.h" ;;
  *) echo "usage: scripts/sanitize.sh asan|tsan [--pure] [ctest args...]" >&2; exit 2 ;;
esac
shift
pure=0
if [ "${1:-}" = "--pure" ]; then pure=1; shift; fi

BUILD_DIR=${BUILD_DIR:-build-$mode}
opt=${SANITIZE_OPT:-$opt}
JOBS=${JOBS:-$(nproc)}
supp=$PWD/scripts/sanitize

# g++ brings the sanitizers' runtimes (libasan, libubsan, liblsan, libtsan: gcc's own packages,
# through build-essential); GoogleTest and what the process tests run come from `test`.
scripts/install-deps.sh build test

# tsan: abseil and gRPC built under TSan (the script prints their prefix).
cmake_deps=()
if [ "$mode" = tsan ]; then
  deps=$(scripts/grpc-from-debian-source.sh tsan)
  export PKG_CONFIG_PATH="$deps/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  cmake_deps=(-DCMAKE_PREFIX_PATH="$deps" -DCMAKE_BUILD_RPATH="$deps/lib")
  # pkg-config's answers are cached: a build folder configured against other gRPC starts over.
  if [ -f "$BUILD_DIR/CMakeCache.txt" ] && ! grep -qF "$deps" "$BUILD_DIR/CMakeCache.txt"; then
    rm -f "$BUILD_DIR/CMakeCache.txt"
  fi
fi

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
start=$(date +%s)
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt" \
  -DCMAKE_CXX_FLAGS="$flags ${cflags:-} -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" \
  -DDLAUNCH_BUILD_WORKER=OFF -DDLAUNCH_BUILD_TESTS=ON "${cmake_deps[@]}" "${launcher[@]}" \
  >/dev/null
targets=()
if [ $pure = 1 ]; then targets=(--target pure_tests); fi
cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
built=$(date +%s)

# halt_on_error: the first report ends the process, so the test fails. Every process writes its
# reports to a file under $reports instead of stderr: a report in a process that a test runs (a
# dlaunch or an agent whose failure the test expects) fails the run as well, printed at its end.
reports="$(cd "$BUILD_DIR" && pwd)/sanitizer-reports"
rm -rf "$reports" && mkdir -p "$reports"
export ASAN_OPTIONS="log_path=$reports/asan:halt_on_error=1:detect_leaks=1:strict_init_order=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# hwloc's PCI plugin (the agent's topology with GPUs) loads libpciaccess, whose device list
# stays reachable from its globals until the plugin is dlclosed at the end of the topology's
# use; LeakSanitizer then reports it from an "<unknown module>" that no suppression can name.
# Keeping the library loaded for the whole process leaves it reachable and the report silent.
if [ "$mode" = asan ]; then
  pciaccess=$(ldconfig -p 2>/dev/null | awk '/libpciaccess\.so\.0 /{p = $NF} END {print p}' || true)
  if [ -n "$pciaccess" ]; then
    export LD_PRELOAD="$pciaccess${LD_PRELOAD:+:$LD_PRELOAD}"
    ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0"  # the ASan runtime is not first now
  fi
fi
export UBSAN_OPTIONS="log_path=$reports/ubsan:halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export TSAN_OPTIONS="log_path=$reports/tsan:halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"

# The labels (tests/CMakeLists.txt): pure, the unit suites; integration, the tests that run
# processes, sockets or real time; cluster, install and fuzz. -L also drops the placeholders of
# binaries that --pure did not build.
label_args=()
if [ $pure = 1 ]; then
  label_args=(-L '^pure$')
elif [ "$mode" = tsan ]; then
  label_args=(-L '^(pure|integration)$' -LE "cluster|install|fuzz")
fi
status=0
(cd "$BUILD_DIR" && ctest --output-on-failure --timeout 600 -j "$JOBS" "${label_args[@]}" "$@") ||
  status=$?
found=$(find "$reports" -type f | sort)
if [ -n "$found" ]; then
  for f in $found; do echo "=== $f" && cat "$f"; done
  echo "sanitize.sh $mode: $(echo "$found" | wc -l) process(es) wrote a sanitizer report (above)"
  status=1
fi
end=$(date +%s)
echo "sanitize.sh $mode$([ $pure = 1 ] && echo ' --pure'): build $((built - start)) s," \
  "tests $((end - built)) s, exit $status"
exit $status
