#!/usr/bin/env python3
"""Where a restart's time went, from a job's events.jsonl: seconds after the first node_lost (or
failure) of each step of the first restart, and how the worker events of the stopped and the new
round spread. Standard library only.

    bench/scale/restart_breakdown.py JOB_DIR/events.jsonl
"""
import datetime
import json
import sys

STEPS = ("failure_detected", "round_stopping", "restart_decision", "restart", "round_started",
         "workers_started")


def seconds(stamp):
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def spread(times):
    if not times:
        return "none"
    times.sort()
    q = [times[int(f * (len(times) - 1))] for f in (0, 0.5, 1)]
    return f"{len(times)}, first {q[0]:.3f}, median {q[1]:.3f}, last {q[2]:.3f}"


def main(path):
    start = None
    steps, ended, started = {}, [], []
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            t = seconds(e["time"])
            if start is None and ("node_lost" in e or "failure" in e):
                start = t
            if start is None:
                continue
            for k in STEPS:
                if k in e and k not in steps:
                    steps[k] = t - start
            if "worker_ended" in e and e.get("round", 0) == 0:
                ended.append(t - start)
            if "worker_started" in e and e.get("round", 0) == 1:
                started.append(t - start)
    if start is None:
        sys.exit(f"{path}: no node_lost or failure event")
    for k in STEPS:
        print(f"{k:18} {steps[k]:.3f} s" if k in steps else f"{k:18} -")
    print(f"round 0's worker ends: {spread(ended)}")
    print(f"round 1's worker starts: {spread(started)}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
