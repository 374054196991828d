#!/usr/bin/env bash
# Restart benchmark: a worker SIGKILLed on 4 local nodes, dlaunch run --max-restarts vs torchrun
# --max_restarts, printed as a markdown table. Options (see --help): --nodes 4 --nproc 2
# --reps 20 --torchrun-reps 5 --dlaunch PATH --no-torchrun --json FILE.
# Needs Debian's python3-torch for torchrun, hence /usr/bin/python3 and not the python3 on PATH.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec /usr/bin/python3 "$here/restart_bench.py" "$@"
