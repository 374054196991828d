#!/usr/bin/env bash
# A real `dlaunch run` against N simulated agents (load_agents), N = 100..10,000; prints a markdown
# table. Options: --sizes 100,1000,4000,10000 --run-s 40 --lose-at-s 10 --channels 8 --timeout 240
# --dlaunch PATH --load-agents PATH --json FILE (see scale_bench.py).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec /usr/bin/python3 "$here/scale_bench.py" "$@"
