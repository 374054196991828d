#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs the whole default suite.
#   scripts/test.sh [ctest args...]          e.g. scripts/test.sh -R rendezvous
#   scripts/test.sh --pure [ctest args...]   the inner loop: builds and runs only the pure unit
#                                            suites (ctest label pure), installs nothing
# The default suite is every ctest test of the build: the C++ suites (GoogleTest) and the dlaunch
# Python package's unittest suites under python/tests (label python; tests/python/CMakeLists.txt).
# It includes one long test, 2 epochs of real training to >= 88% accuracy
# (about 4 minutes on 2 cores); DLAUNCH_QUICK_TESTS=1 skips it. Benchmarks live in bench/.
# --pure: no process, socket or real time (tests/CMakeLists.txt says which binaries), so it
# takes seconds once built; ctest runs JOBS (default: every core) at once.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--pure" ]; then
  shift
  scripts/build.sh pure_tests || {
    echo "test.sh --pure: the build failed (no GoogleTest? scripts/install-deps.sh test)" >&2
    exit 1
  }
  cd "${BUILD_DIR:-build}"
  exec ctest --output-on-failure --timeout 600 -j "${JOBS:-$(nproc)}" -L '^pure$' "$@"
fi
scripts/install-deps.sh
scripts/build.sh
# The tests that read hung Python ranks' stacks run the build tree's py-spy (DLAUNCH_PY_SPY);
# without PyPI they are skipped, and say so.
scripts/py-spy.sh >/dev/null || echo "test: py-spy could not be installed; its tests skip" >&2
# The Python package's callback tests (label python) run in the PyTorch 2.x environment of
# scripts/torch-venv.sh where there is one; this adds lightning and transformers to it.
scripts/python-test-venv.sh >/dev/null || echo "test: the Python callbacks' tests skip" >&2
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 600 "$@"
