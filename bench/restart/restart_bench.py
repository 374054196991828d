"""Restart benchmark: one worker SIGKILLed on N local nodes, restarted in a new round.

For dlaunch (`dlaunch run --max-restarts 1`) it reads the job's events.jsonl: *detection* is the
`failure_detected` event's wall-clock time minus the victim's own time stamp just before it
killed itself; *restart* is `restart_s` of round 1's `workers_started` event (from the failure's
detection to the STARTED event of the last worker of round 1, as the launcher saw it). For both
dlaunch and torchrun (`--max_restarts=1`, c10d rendezvous, one torchrun per node) it also takes,
from the workers' own time stamps, *kill -> all running*: the last round-1 worker's start minus
the victim's kill stamp. Standard library only; prints a markdown table.
"""

import argparse
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "restart_worker.sh")


def percentile(values, p):
    """Nearest-rank percentile."""
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_stamps(path):
    kill, starts = None, {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 4:
                continue
            rnd, rank, what, t = int(parts[0]), parts[1], parts[2], float(parts[3])
            if what == "kill":
                kill = t
            else:
                starts.setdefault(rnd, []).append(t)
    return kill, starts


def wall(event_time):
    return datetime.strptime(event_time, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=timezone.utc).timestamp()


def env_for(stamps, world):
    env = dict(os.environ)
    env.update(BENCH_STAMPS=stamps, BENCH_VICTIM="1", BENCH_WORLD=str(world))
    return env


def run_dlaunch(args, tmp):
    world = args.nodes * args.nproc
    stamps = os.path.join(tmp, "stamps")
    job_dir = os.path.join(tmp, "job")
    cmd = [args.dlaunch, "run", "--nnodes", str(args.nodes), "--nproc-per-node", str(args.nproc),
           "--max-restarts", "1", "--heartbeat", "0.5", "--grace", "2", "--job-dir", job_dir,
           "--", WORKER]
    p = subprocess.run(cmd, env=env_for(stamps, world), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"dlaunch exited {p.returncode}:\n{p.stdout}")
    kill, starts = read_stamps(stamps)
    detected = restart = None
    with open(os.path.join(job_dir, "events.jsonl")) as f:
        for line in f:
            e = json.loads(line)
            if "failure_detected" in e and detected is None:
                detected = wall(e["time"])
            if "workers_started" in e and e.get("round") == 1:
                restart = e["workers_started"]["restart_s"]
    return {"detect_s": detected - kill, "restart_s": restart,
            "kill_to_running_s": max(starts[1]) - kill}


def run_torchrun(args, tmp):
    world = args.nodes * args.nproc
    stamps = os.path.join(tmp, "stamps")
    port = free_port()
    cmd = ["/usr/bin/python3", "-m", "torch.distributed.run", "--rdzv_backend=c10d",
           f"--rdzv_endpoint=127.0.0.1:{port}", f"--rdzv_id=bench{port}",
           f"--nnodes={args.nodes}", f"--nproc_per_node={args.nproc}", "--max_restarts=1",
           "--redirects=9:0", "--tee=9:0", "--no_python", WORKER]
    procs = [subprocess.Popen(cmd, env=env_for(stamps, world), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for _ in range(args.nodes)]
    try:
        codes = [p.wait(timeout=180) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    kill, starts = read_stamps(stamps)
    if 1 not in starts or len(starts[1]) < world:
        raise RuntimeError(f"torchrun did not restart every worker (exit codes {codes})")
    return {"kill_to_running_s": max(starts[1]) - kill}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--torchrun-reps", type=int, default=5)
    ap.add_argument("--no-torchrun", action="store_true")
    ap.add_argument("--dlaunch", default="build/bin/dlaunch")
    ap.add_argument("--json")
    args = ap.parse_args()
    args.dlaunch = os.path.abspath(args.dlaunch)

    results = {"dlaunch": [], "torchrun": []}
    plan = [("dlaunch", run_dlaunch)] * args.reps
    if not args.no_torchrun:
        # Interleaved: a torchrun run after every reps/torchrun_reps dlaunch runs.
        every = max(1, args.reps // max(1, args.torchrun_reps))
        plan = []
        for i in range(args.reps):
            plan.append(("dlaunch", run_dlaunch))
            if i % every == every - 1 and len([p for p in plan if p[0] == "torchrun"]) < args.torchrun_reps:
                plan.append(("torchrun", run_torchrun))
    for name, fn in plan:
        tmp = tempfile.mkdtemp(prefix="dlaunch-restart-bench-")
        try:
            r = fn(args, tmp)
            results[name].append(r)
            print(name, json.dumps(r), file=sys.stderr, flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        time.sleep(0.2)

    def cell(name, key, p):
        vals = [r[key] for r in results[name] if key in r]
        return f"{percentile(vals, p):.3f}" if vals else "-"

    print(f"| launcher | runs | detection p50 (s) | detection p99 (s) | restart p50 (s) | "
          f"restart p99 (s) | kill -> all running p50 (s) | kill -> all running p99 (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in ("dlaunch", "torchrun"):
        if not results[name]:
            continue
        print(f"| {name} | {len(results[name])} | {cell(name, 'detect_s', 50)} | "
              f"{cell(name, 'detect_s', 99)} | {cell(name, 'restart_s', 50)} | "
              f"{cell(name, 'restart_s', 99)} | {cell(name, 'kill_to_running_s', 50)} | "
              f"{cell(name, 'kill_to_running_s', 99)} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
