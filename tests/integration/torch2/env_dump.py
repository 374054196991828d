"""Writes the rank's whole environment to <dir>/rank-<RANK>.env as /proc/PID/environ holds it
(KEY=VALUE entries, each ended by a NUL), for the test that compares what torchrun 2.x and
dlaunch give each rank."""
import os
import sys

with open(os.path.join(sys.argv[1], f"rank-{os.environ['RANK']}.env"), "w") as out:
    out.write("".join(f"{k}={v}\0" for k, v in os.environ.items()))
