#!/bin/bash
#PBS -N fmnist
#PBS -l select=2:system=polaris
#PBS -l place=scatter
#PBS -l walltime=0:30:00
#PBS -l filesystems=home:eagle
#PBS -q debug
#PBS -A MyProject
#PBS -o /home/user/proj/runs/fmnist-20261121-101530-a3f9/scheduler.out
#PBS -e /home/user/proj/runs/fmnist-20261121-101530-a3f9/scheduler.err
#
# dlaunch job fmnist-20261121-101530-a3f9 (site polaris, PBS Pro). Rendered by `dlaunch submit`;
# `dlaunch script` prints the same text without submitting. Values from job.yaml are checked
# or quoted; the `setup` lines are the job's own shell code.
set -eo pipefail

# The directory qsub ran in (what PBS calls PBS_O_WORKDIR): relative paths in job.yaml resolve here.
cd /home/user/proj
# Setup: module loads, the site's lines, then the job's own scheduler.setup lines (verbatim).
export NCCL_NET_GDR_LEVEL=PHB
export NCCL_CROSS_NIC=1
module use /soft/modulefiles
module load conda
conda activate
source /home/user/venv/bin/activate
set -u

# One agent per node of the allocation; the launcher runs here, on the first node.
NNODES=$(wc -l < "$PBS_NODEFILE")
exec /opt/dlaunch/bin/dlaunch run /home/user/proj/runs/fmnist-20261121-101530-a3f9/job.yaml --job-dir /home/user/proj/runs/fmnist-20261121-101530-a3f9 \
  --launcher mpiexec --launcher-cmd "mpiexec -n ${NNODES} --ppn 1 --cpu-bind none --hostfile ${PBS_NODEFILE}"
