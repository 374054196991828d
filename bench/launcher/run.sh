#!/usr/bin/env bash
# Launcher start-up benchmark: `dlaunch run` against torchrun 2.x, ft_launcher, DeepSpeed's launcher
# and TorchX's local scheduler (and, with --kinds ...,torchrun1, Debian's torchrun 1.13) on this
# machine, printed as markdown tables. Options (see --help): --configs 1x1,2x1,4x1,8x1,16x1,4x2
# --kinds dlaunch,torchrun2,ft_launcher,deepspeed,torchx --reps 5 --other-reps 3 --other-reps-large 1
# --rss-sleep 3 --venv build-compare/venv --dlaunch PATH --json FILE --report FILE.
# The script itself is standard-library Python, run by /usr/bin/python3 (Debian's, which also
# holds python3-torch for torchrun1); the other launchers come from the venv of bench/compare/venv.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec /usr/bin/python3 "$here/launcher_bench.py" "$@"
