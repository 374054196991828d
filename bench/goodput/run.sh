#!/usr/bin/env bash
# Goodput bench: a real PyTorch 2.x DDP job with faults at a fixed rate under dlaunch, torchrun
# 2.x and ft_launcher (bench/compare/venv.sh's venv), goodput and lost seconds side by side.
# Options: see goodput_bench.py --help (--kinds, --reps, --steps, --fault-every, --faults, --json).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec /usr/bin/python3 "$here/goodput_bench.py" "$@"
