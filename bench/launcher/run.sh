#!/usr/bin/env bash
# Launcher start-up benchmark: `dlaunch run` vs torchrun on this machine, printed as a markdown
# table. Options (see --help): --nodes 1,2,4,8,16,32 --reps 5 --torchrun-reps 3
# --torchrun-reps-large 1 --rss-sleep 3 --dlaunch PATH --no-torchrun --json FILE.
# Needs Debian's python3-torch for torchrun, hence /usr/bin/python3 and not the python3 on PATH.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec /usr/bin/python3 "$here/launcher_bench.py" "$@"
