#!/bin/bash
#COBALT -n 2
#COBALT -t 30
#COBALT -q full-node
#COBALT -A MyProject
#COBALT --attrs filesystems=home,grand
#COBALT -O /home/user/proj/runs/fmnist-20261121-101530-a3f9/scheduler
#
# dlaunch job fmnist-20261121-101530-a3f9 (site thetagpu, Cobalt). Rendered by `dlaunch submit`;
# `dlaunch script` prints the same text without submitting. Values from job.yaml are checked
# or quoted; the `setup` lines are the job's own shell code.
set -eo pipefail

# The directory qsub ran in: relative paths in job.yaml resolve here.
cd /home/user/proj
# Setup: module loads, the site's lines, then the job's own scheduler.setup lines (verbatim).
source /home/user/venv/bin/activate
set -u

# One agent per node of the allocation; the launcher runs here, on the first node.
NNODES=$(wc -l < "$COBALT_NODEFILE")
exec /opt/dlaunch/bin/dlaunch run /home/user/proj/runs/fmnist-20261121-101530-a3f9/job.yaml --job-dir /home/user/proj/runs/fmnist-20261121-101530-a3f9 \
  --launcher mpirun --launcher-cmd "mpirun -hostfile ${COBALT_NODEFILE} -n ${NNODES} -npernode 1 --bind-to none"
