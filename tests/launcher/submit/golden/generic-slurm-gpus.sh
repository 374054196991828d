#!/bin/bash
#SBATCH -J fmnist
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
#SBATCH -t 0:30:00
#SBATCH -p gpu
#SBATCH -A MyProject
#SBATCH -o /home/user/proj/runs/fmnist-20261121-101530-a3f9/scheduler.out
#
# dlaunch job fmnist-20261121-101530-a3f9 (site generic-slurm, Slurm). Rendered by `dlaunch submit`;
# `dlaunch script` prints the same text without submitting. Values from job.yaml are checked
# or quoted; the `setup` lines are the job's own shell code.
set -eo pipefail

# The directory sbatch ran in: relative paths in job.yaml resolve here.
cd /home/user/proj
# Setup: module loads, the site's lines, then the job's own scheduler.setup lines (verbatim).
source /home/user/venv/bin/activate
set -u

# One agent per node of the allocation; the launcher runs here, on the first node.
NNODES=${SLURM_JOB_NUM_NODES}
exec /opt/dlaunch/bin/dlaunch run /home/user/proj/runs/fmnist-20261121-101530-a3f9/job.yaml --job-dir /home/user/proj/runs/fmnist-20261121-101530-a3f9 \
  --launcher srun --launcher-cmd "srun --ntasks-per-node=1 -N ${NNODES} --kill-on-bad-exit=1"
