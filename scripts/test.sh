#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs the whole default suite.
#   scripts/test.sh [ctest args...]      e.g. scripts/test.sh -R rendezvous
# Long studies (accuracy run, benchmarks) are opt-in: DLAUNCH_SLOW_TESTS=1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 600 "$@"
