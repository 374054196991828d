#!/usr/bin/env bash
# The main job: a 2-node x 2-process data-parallel training run of dlaunch-worker on
# Fashion-MNIST, all "nodes" on this machine. Installs and builds what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build worker
scripts/build.sh dlaunch dlaunch-agent dlaunch-worker
exec build/bin/dlaunch run examples/local.yaml "$@"
