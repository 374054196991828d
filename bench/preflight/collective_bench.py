#!/usr/bin/env python3
"""What the collective check before round 0 costs (docs/stragglers.md, "Before round 0").

For each N: `dlaunch run` of a job of N local nodes running `true`, with the collective check on
and off (preflight.collective), interleaved, `--runs` times each. Prints the median wall time of
each, their difference (the check's cost to the job's start), the check's own time (the largest
`link` check seconds of the nodes' node_joined events: from a node's first call to its verdict)
and the medians the launcher printed.

  collective_bench.py --bin build/bin [--nodes 2,8,64] [--runs 5] [--size 4MiB]
      [--torch-python /usr/bin/python3]

--torch-python: the job is that interpreter running a script that names torch without importing
it (`if False: import torch`), so the check measures with Gloo through that interpreter's torch
(preflight.collective_engine: auto) while the ranks themselves start as fast as `true`.
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import tempfile
import time


def run_job(bin_dir, nodes, collective, size, workdir, torch_python=None):
    job = os.path.join(workdir, "job.yaml")
    command = '["true"]'
    if torch_python:
        with open(os.path.join(workdir, "train.py"), "w") as f:
            f.write("if False:\n    import torch\n")
        command = "[%s, %s/train.py]" % (torch_python, workdir)
    with open(job, "w") as f:
        f.write("name: ccbench\nnodes: %d\ncommand: %s\nlogs: {dir: %s/runs}\n"
                "rendezvous: {join_timeout: 120s}\n"
                "preflight: {collective: %s, collective_size: %s, collective_budget: 60s}\n"
                % (nodes, command, workdir, "on" if collective else "off", size))
    start = time.monotonic()
    p = subprocess.run([os.path.join(bin_dir, "dlaunch"), "run", job], cwd=workdir,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - start
    if p.returncode != 0:
        raise SystemExit("dlaunch run failed (%d):\n%s" % (p.returncode, p.stdout[-3000:]))
    summary = ""
    for line in p.stdout.splitlines():
        if "collective check:" in line:
            summary = line.split("[dlaunch] ", 1)[-1]
    check_s = 0.0
    slow = [l for l in p.stdout.splitlines() if "slow node:" in l]
    for events in glob.glob(os.path.join(workdir, "runs", "*", "events.jsonl")):
        with open(events) as f:
            for line in f:
                e = json.loads(line)
                for c in e.get("node_joined", {}).get("checks", []):
                    if c.get("name") == "link":
                        check_s = max(check_s, c.get("seconds", 0.0))
    return wall, check_s, summary, slow


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--nodes", default="2,8,64")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size", default="4MiB")
    ap.add_argument("--torch-python")
    args = ap.parse_args()
    bin_dir = os.path.abspath(args.bin)
    print("| nodes | start, check on (s) | off (s) | cost (s) | the check's own time (s) | "
          "slow nodes named | launcher's line (last run) |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for n in [int(x) for x in args.nodes.split(",")]:
        on, off, own, named, line = [], [], [], 0, ""
        for _ in range(args.runs):
            for collective in (True, False):
                with tempfile.TemporaryDirectory() as tmp:
                    wall, check_s, summary, slow = run_job(bin_dir, n, collective, args.size, tmp,
                                                               args.torch_python)
                if collective:
                    on.append(wall)
                    own.append(check_s)
                    named += len(slow)
                    line = summary
                else:
                    off.append(wall)
        m_on, m_off = statistics.median(on), statistics.median(off)
        print("| %d | %.2f | %.2f | %.2f | %.2f | %d in %d runs | %s |"
              % (n, m_on, m_off, m_on - m_off, statistics.median(own), named, args.runs, line),
              flush=True)


if __name__ == "__main__":
    main()
