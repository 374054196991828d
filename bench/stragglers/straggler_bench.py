#!/usr/bin/env python3
"""The straggler score on real local nodes: detection time and overhead (docs/stragglers.md).

Runs `dlaunch run` of tests/integration/slow_rank.py (the dlaunch package's reports, a sleep per
step) on 2 local nodes x 2 ranks, interleaved per repetition:

  on    a clean job, stragglers.policy: report       -> step time, false alarms
  off   the same job, stragglers.policy: off         -> step time
  slow  rank 3 sleeps SLOW_FACTOR x as long from 10 s on (after warm-up), default settings
        -> time from its slowdown to straggler_detected, and the node named

Step time: each report's interval_s / the steps it covers, from metrics.jsonl, median over all
ranks' reports of the run; overhead = median(on) / median(off) - 1. Prints markdown tables.

  /usr/bin/python3 bench/stragglers/straggler_bench.py [--dlaunch build/bin/dlaunch] [--reps 5]
      [--run-s 30] [--slow-factor 2] [--json FILE]

--one POLICY --steps N runs a single clean job of N steps per rank with that policy and appends
its median step time (ms) and its straggler_detected count as a line to --out: the form for an
outside timer that alternates two commands (policy report against off) and takes pairs' ratios of
the whole job's wall time; the step medians of the same runs are then paired from the two files.
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(SRC, "tests", "integration", "slow_rank.py")


def unix(rfc3339):
    return datetime.datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


def run_job(dlaunch, policy, env_extra, run_s, steps=0):
    tmp = tempfile.mkdtemp(prefix="dlaunch-straggler-")
    job_dir = os.path.join(tmp, "job")
    with open(os.path.join(tmp, "job.yaml"), "w") as f:
        f.write("command: [/usr/bin/python3, %s]\nstragglers:\n  policy: %s\n" % (SCRIPT, policy))
    env = dict(os.environ, PYTHONPATH=os.path.join(SRC, "python", "src"), RUN_S=str(run_s), STEPS=str(steps),
               **env_extra)
    p = subprocess.run([dlaunch, "run", os.path.join(tmp, "job.yaml"), "--nnodes", "2",
                        "--nproc-per-node", "2", "--job-dir", job_dir, "--heartbeat", "1",
                        "--grace", "2", "--no-preflight"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=run_s + 120)
    if p.returncode != 0:
        sys.exit("dlaunch run failed (%d): %s" % (p.returncode, p.stderr[-2000:]))
    return job_dir


def step_times(job_dir):
    last = {}
    times = []
    with open(os.path.join(job_dir, "metrics.jsonl")) as f:
        for line in f:
            m = json.loads(line)
            r = m.get("report")
            if not r:
                continue
            rank, step = r.get("rank", 0), int(r.get("step", 0))
            if rank in last and step > last[rank] and r.get("interval_s", 0) > 0:
                times.append(r["interval_s"] / (step - last[rank]))
            last[rank] = max(step, last.get(rank, 0))
    return times


def events(job_dir):
    with open(os.path.join(job_dir, "events.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def run_one(a):
    job = run_job(a.dlaunch, a.one, {}, a.run_s, a.steps)
    line = "%.3f %d\n" % (statistics.median(step_times(job)) * 1e3,
                          sum("straggler_detected" in e for e in events(job)))
    if a.out:
        with open(a.out, "a") as f:
            f.write(line)
    else:
        sys.stdout.write(line)
    shutil.rmtree(os.path.dirname(job), ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dlaunch", default=os.path.join(SRC, "build", "bin", "dlaunch"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--run-s", type=float, default=30)
    ap.add_argument("--slow-factor", type=float, default=2)
    ap.add_argument("--json")
    ap.add_argument("--one", choices=("report", "off"))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.one:
        return run_one(a)
    rows = []
    for rep in range(a.reps):
        row = {}
        for kind in ("on", "off") if rep % 2 == 0 else ("off", "on"):
            job = run_job(a.dlaunch, "report" if kind == "on" else "off", {}, a.run_s)
            row[kind + "_step_ms"] = statistics.median(step_times(job)) * 1e3
            if kind == "on":
                row["false_alarms"] = sum("straggler_detected" in e for e in events(job))
        job = run_job(a.dlaunch, "report", {"SLOW_RANK": "3", "SLOW_FACTOR": str(a.slow_factor),
                                            "SLOW_FROM": "10", "SLOW_S": str(a.run_s)}, a.run_s)
        with open(os.path.join(job, "slow-from")) as f:
            slow_from = float(f.read())
        detected = [e for e in events(job) if "straggler_detected" in e]
        row["named"] = ",".join("node %d rank %d x%.2f" % (e["straggler_detected"]["node_id"],
                                                            e["straggler_detected"]["rank"],
                                                            e["straggler_detected"]["ratio"])
                                for e in detected)
        row["detect_s"] = unix(detected[0]["time"]) - slow_from if detected else None
        rows.append(row)
        print("rep %d: %s" % (rep, row), file=sys.stderr)
    on = statistics.median(r["on_step_ms"] for r in rows)
    off = statistics.median(r["off_step_ms"] for r in rows)
    print("| rep | step ms, score on | step ms, score off | false alarms (clean, on) | slow run: named | detection s |")
    print("|---|---|---|---|---|---|")
    for i, r in enumerate(rows):
        print("| %d | %.2f | %.2f | %d | %s | %s |" % (
            i, r["on_step_ms"], r["off_step_ms"], r["false_alarms"], r["named"] or "none",
            "%.1f" % r["detect_s"] if r["detect_s"] is not None else "-"))
    detect = [r["detect_s"] for r in rows if r["detect_s"] is not None]
    print()
    print("| median step ms on | median step ms off | overhead | detection s (median, max) | clean runs with a straggler named |")
    print("|---|---|---|---|---|")
    print("| %.2f | %.2f | %+.2f%% | %s | %d of %d |" % (
        on, off, (on / off - 1) * 100,
        "%.1f, %.1f" % (statistics.median(detect), max(detect)) if detect else "-",
        sum(r["false_alarms"] > 0 for r in rows), len(rows)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
