#!/usr/bin/env bash
# The main job: a 2-node x 2-process data-parallel training run of dlaunch-worker on
# Fashion-MNIST, all "nodes" on this machine. Installs and builds what is missing first,
# py-spy included (scripts/py-spy.sh), so that a hung Python rank's stacks are taken from this
# build as from an installed one.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build worker stacks
scripts/build.sh dlaunch dlaunch-agent dlaunch-worker
scripts/py-spy.sh >/dev/null ||
  echo "demo: py-spy could not be installed; hung Python ranks get gdb's native stacks only" >&2
exec build/bin/dlaunch run examples/local.yaml "$@"
