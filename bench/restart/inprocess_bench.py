#!/usr/bin/env python3
"""In-process restart against respawn with a real PyTorch 2.x DDP job (inprocess_job.py: CPU, gloo)
on 2 local nodes x 2 ranks under `dlaunch run`: rank 1 SIGKILLs itself after step --fault-step;
for each path, the time from the fault to every rank of the next round through its first step,
phase by phase, and the parameters' digest at the end against an uninterrupted run's.

  inprocess_bench.py --python VENV_PYTHON [--dlaunch build/bin/dlaunch] [--reps 3]
  inprocess_bench.py --python VENV_PYTHON --check     the test: in_process's digest equals the
                                                      uninterrupted run's; exit 1 if not

Phases (medians over the reps, seconds from the fault; a kept rank has no start or import):
  started   the last rank of the next round started (a new process) or took its place (kept)
  pg        the last rank's process group made
  synced    the last rank's state in place (checkpoint read, or broadcast from a kept rank)
  step      the last rank's first step of the round done
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
JOURNAL_PATHS = []  # (rank, restart_path) of the last run's worker_started events
START_PATHS = []  # (rank, start_path) of the last run's round-1 worker_started events (warm)


def run(args, path, fault, workdir):
    """One job; returns (digest, stamps list)."""
    d = tempfile.mkdtemp(prefix=f"{path}-", dir=workdir)
    stamps = os.path.join(d, "stamps")
    ckpt = os.path.join(d, "ckpt")
    os.makedirs(stamps)
    os.makedirs(ckpt)
    job = [args.python, os.path.join(HERE, "inprocess_job.py"), "--steps", str(args.steps),
           "--stamps", stamps]
    if fault:
        job += ["--fault-rank", "1", "--fault-step", str(args.fault_step)]
        if args.warm:
            job += ["--fault-when-warm", "2"]
    if path == "respawn":
        job += ["--respawn", "--ckpt-dir", ckpt]
    yaml = (f"name: inprocess-bench\nnodes: 2\nnproc_per_node: 2\ncommand: {json.dumps(job)}\n"
            f"max_restarts: {1 if fault else 0}\nrestart: {path}\n"
            # exit_timeout: four torch processes finishing at once on a loaded 2-core machine
            # took up to 8 s to exit after their last stamp (a kept rank also tears down its
            # abandoned round's group then), which a 5 s limit named a hang at exit.
            "heartbeat:\n  interval: 1s\n  misses: 3\nstop:\n  grace: 4s\n  exit_timeout: 30s\n"
            f"rendezvous:\n  join_timeout: 120s\n  worker_store: {args.worker_store}\n"
            "cpus:\n  binding: none\n"
            f"restarts:\n  warm_start: {'on' if args.warm else 'off'}\n")
    with open(os.path.join(d, "job.yaml"), "w") as f:
        f.write(yaml)
    res = subprocess.run([args.dlaunch, "run", os.path.join(d, "job.yaml"), "--job-dir",
                          os.path.join(d, "job"), "--no-preflight"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    digest = None
    for log in sorted(glob.glob(os.path.join(d, "job", "logs", "rank-*.log"))):
        with open(log, errors="replace") as f:
            for line in f:
                m = re.search(r"digest (\w+) step (\d+)", line)
                if m:
                    digest = m.group(1)
    if res.returncode != 0 or digest is None:
        sys.stderr.write(res.stdout[-4000:])
        raise SystemExit(f"{path} run failed (exit {res.returncode}, digest {digest}); kept in {d}")
    JOURNAL_PATHS.clear()
    START_PATHS.clear()
    for name in glob.glob(os.path.join(d, "job", "events.jsonl")):
        with open(name) as f:
            for line in f:
                event = json.loads(line)
                started = event.get("worker_started", {})
                if started.get("restart_path"):
                    JOURNAL_PATHS.append((started.get("rank", 0), started["restart_path"]))
                if started.get("start_path") and event.get("round", 0) >= 1:
                    START_PATHS.append((started.get("rank", 0), started["start_path"]))
    events = []
    for name in glob.glob(os.path.join(stamps, "*.jsonl")):
        with open(name) as f:
            events += [json.loads(line) for line in f]
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    return digest, events, res.stdout


def phases(events):
    """Seconds from the fault to the last rank of round 1 reaching each phase."""
    fault = [e["t"] for e in events if e["e"] == "fault"]
    if not fault:
        return None
    t0 = min(fault)
    out = {}
    for phase, names in (("started", ("start", "kept")), ("pg", ("pg",)), ("synced", ("synced",)),
                         ("step", ("step",))):
        per_rank = {}
        for e in events:
            if e["round"] >= 1 and e["e"] in names and e["t"] >= t0 - 0.001:
                per_rank[e["rank"]] = min(per_rank.get(e["rank"], e["t"]), e["t"])
        out[phase] = max(per_rank.values()) - t0 if len(per_rank) == 4 else None
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True, help="a Python with PyTorch 2.x")
    ap.add_argument("--dlaunch", default=os.path.join(ROOT, "build", "bin", "dlaunch"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--fault-step", type=int, default=20)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--worker-store", default="rank0", choices=("rank0", "agent"),
                    help="rendezvous.worker_store: who serves MASTER_PORT's store")
    ap.add_argument("--warm", action="store_true",
                    help="restarts.warm_start: on (a rank started anew forks from the warm process)")
    ap.add_argument("--keep", action="store_true", help="keep the job directories")
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="dlaunch-inprocess-bench-")
    clean, _, _ = run(args, "in_process", False, workdir)
    if args.check:
        kept, events, out = run(args, "in_process", True, workdir)
        groups = [e for e in events if e["e"] == "pg" and e["round"] == 1]
        same_process = {e["rank"] for e in events if e["e"] == "kept" and e["round"] == 1}
        print(f"uninterrupted {clean}\nin_process    {kept}\n"
              f"round 1: {len(groups)} process groups, ranks kept in their process: "
              f"{sorted(same_process)}")
        print("journal: " + ", ".join(f"rank {r} {p}" for r, p in sorted(JOURNAL_PATHS)))
        if args.warm:
            print("started anew: " + ", ".join(f"rank {r} {p}" for r, p in sorted(START_PATHS)))
        # Without a checkpoint a job started anew would reach the same digest: the check is
        # that three ranks kept their process (and rank 1 alone was started anew).
        ok = (kept == clean and len(groups) == 4 and same_process == {0, 2, 3} and
              sorted(JOURNAL_PATHS) == [(0, "in_process"), (1, "respawn"), (2, "in_process"),
                                        (3, "in_process")] and
              (not args.warm or START_PATHS == [(1, "warm")]))
        print("bit-identical" if ok else "DIFFERENT")
        return 0 if ok else 1
    rows = {"in_process": [], "respawn": []}
    for _ in range(args.reps):
        for path in rows:
            digest, events, _ = run(args, path, True, workdir)
            kept = len({e["rank"] for e in events if e["e"] == "kept"})
            rows[path].append((phases(events), digest == clean, kept))
    for path, results in rows.items():
        print(f"{path}: digest equal to the uninterrupted run's in "
              f"{sum(ok for _, ok, _ in results)} of {len(results)}; ranks kept in their "
              f"process per run: {[k for _, _, k in results]}")
        for phase in ("started", "pg", "synced", "step"):
            vals = [p[phase] for p, _, _ in results if p and p[phase] is not None]
            if vals:
                print(f"  {phase:8s} median {statistics.median(vals):.2f} s  "
                      f"({min(vals):.2f}-{max(vals):.2f}, {len(vals)} runs)")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
