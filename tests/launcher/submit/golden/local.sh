#!/bin/bash
# dlaunch job fmnist-20261121-101530-a3f9 (site local, this machine, no scheduler). Rendered by
# `dlaunch submit`, which runs it in the background; `dlaunch script` prints the same text.
# Values from job.yaml are checked or quoted; the `setup` lines are the job's own shell code.
set -eo pipefail

cd /home/user/proj
# Setup: module loads, the site's lines, then the job's own scheduler.setup lines (verbatim).
source /home/user/venv/bin/activate
set -u

exec /opt/dlaunch/bin/dlaunch run /home/user/proj/runs/fmnist-20261121-101530-a3f9/job.yaml --job-dir /home/user/proj/runs/fmnist-20261121-101530-a3f9 \
  --launcher local
