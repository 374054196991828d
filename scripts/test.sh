#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs the whole default suite.
#   scripts/test.sh [ctest args...]      e.g. scripts/test.sh -R rendezvous
# The default suite includes one long test, 2 epochs of real training to >= 88% accuracy
# (about 4 minutes on 2 cores); DLAUNCH_QUICK_TESTS=1 skips it. Benchmarks live in bench/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 600 "$@"
