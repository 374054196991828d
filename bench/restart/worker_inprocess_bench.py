#!/usr/bin/env python3
"""dlaunch-worker's in-process restart against respawn: the C++ LibTorch worker (MLP on
Fashion-MNIST, Gloo on CPU, one intra-op thread per rank, a checkpoint every 10 steps) on 2 local
nodes x 2 ranks under `dlaunch run`; rank 1 is SIGKILLed
from outside (the bench polls its step trace and sends SIGKILL once it has ended step
--fault-step: the command is dlaunch-worker itself, which a warm start needs). Three variants
run side by side (alternating, --reps each): respawn, in_process, and in_process with
restarts.warm_start on (the new rank 1 forked from its node's warm dlaunch-worker, which has
LibTorch loaded and Fashion-MNIST read: worker/warm_serve.h). For each run, from the
worker's own step trace ($DLAUNCH_JOB_DIR/trace/rank-N.jsonl, Unix microseconds):

  fault     the moment the bench sends SIGKILL to rank 1
  kept      the last kept rank's first step of round 1 done, seconds after the fault
            (respawn: the last of the three ranks that were not killed, in their new process)
  new       rank 1's first step of round 1 done (a new process in both paths)
  all       every rank's first step of round 1 done: max(kept, new)

and, phase by phase from the journal (events.jsonl) and the kept ranks' "restart_in_process"
span: the launcher's detection, round 1 sent, rank 1's new process started, the kept ranks'
place taken ("join" received) and their new process group and state ready.

and the parameters at the end against an uninterrupted run's (--save-params, bytes compared).

  worker_inprocess_bench.py [--dlaunch build/bin/dlaunch] [--worker build/bin/dlaunch-worker]
                            [--reps 5] [--steps 60] [--fault-step 25] [--keep]
"""
import argparse
import filecmp
import glob
import json
import os
import shutil
import statistics
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def worker_args(args, d):
    return ["--model", "mlp", "--dataset", "fashion-mnist", "--steps", str(args.steps),
            "--batch-size", "32", "--no-eval", "--threads", "1", "--report-every", "1000",
            "--checkpoint-dir", os.path.join(d, "ckpt"), "--checkpoint-every", "10",
            "--save-params", os.path.join(d, "params{rank}")]


def rank1_pid_and_steps(job):
    """Rank 1's round-0 pid from the journal and the steps its trace has ended (None, 0: not yet)."""
    pid = None
    try:
        with open(os.path.join(job, "events.jsonl")) as f:
            for line in f:
                started = json.loads(line).get("worker_started")
                if started and started.get("rank", 0) == 1:
                    pid = started["pid"]
                    break
        with open(os.path.join(job, "trace", "rank-1.jsonl")) as f:
            steps = sum(1 for line in f if line.startswith('{"step":'))
    except (OSError, ValueError):
        return pid, 0
    return pid, steps


def run(args, path, warm, fault, workdir):
    """One job; returns (its directory, the fault's time, the journal's restart_path and
    start_path per rank)."""
    d = tempfile.mkdtemp(prefix=f"{path}{'-warm' if warm else ''}-", dir=workdir)
    yaml = (f"name: worker-inprocess-bench\nnodes: 2\nnproc_per_node: 2\n"
            f"command: {json.dumps([args.worker] + worker_args(args, d))}\n"
            f"max_restarts: {1 if fault else 0}\nrestart: {path}\n"
            "heartbeat:\n  interval: 1s\n  misses: 3\nstop:\n  grace: 4s\n  exit_timeout: 5s\n"
            "rendezvous:\n  join_timeout: 120s\ncpus:\n  binding: none\n"
            + ("restarts:\n  warm_start: on\n" if warm else ""))
    with open(os.path.join(d, "job.yaml"), "w") as f:
        f.write(yaml)
    job = os.path.join(d, "job")
    proc = subprocess.Popen([args.dlaunch, "run", os.path.join(d, "job.yaml"), "--job-dir", job,
                             "--no-preflight"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    t0 = None
    while fault and t0 is None and proc.poll() is None:
        pid, steps = rank1_pid_and_steps(job)
        if pid and steps >= args.fault_step:
            t0 = time.time()
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)
    out, _ = proc.communicate(timeout=600)
    if proc.returncode != 0 or (fault and t0 is None):
        sys.stderr.write(out[-4000:])
        raise SystemExit(f"{path} run failed (exit {proc.returncode}); kept in {d}")
    paths = {}
    with open(os.path.join(job, "events.jsonl")) as f:
        for line in f:
            started = json.loads(line).get("worker_started")
            if started and started.get("restart_path"):
                paths[started.get("rank", 0)] = (started["restart_path"] + " " +
                                                 started.get("start_path", "")).strip()
    return d, t0, paths


def step_ends(d, rank):
    """(step, start s, end s) of each step line in rank's trace."""
    out = []
    with open(os.path.join(d, "job", "trace", f"rank-{rank}.jsonl")) as f:
        for line in f:
            e = json.loads(line)
            if "step" in e and "ts" in e and "span" not in e:
                dur = e["data"] + e["forward"] + e["backward"] + e["optimizer"]
                out.append((e["step"], e["ts"] / 1e6, (e["ts"] + dur) / 1e6))
    return out


def first_steps(d, t0):
    """Seconds from the fault at t0 to each rank's first step of round 1 done."""
    # A step that started after the fault is of round 1 (round 0's steps after it cannot
    # complete without rank 1).
    return {r: min(end for _, start, end in step_ends(d, r) if start > t0) - t0
                for r in range(4)}


def journal_phases(d, t0):
    """Seconds from the fault to: the launcher's detection, round 1 sent, rank 1's new process
    started; and (in_process) the kept ranks' place taken and their new group and state ready
    (their "restart_in_process" span in the step trace, last of the three)."""
    import datetime

    def at(event):
        return datetime.datetime.fromisoformat(event["time"].replace("Z", "+00:00")).timestamp()

    out = {}
    with open(os.path.join(d, "job", "events.jsonl")) as f:
        events = [json.loads(line) for line in f]
    for e in events:
        if "worker_failed" in e and "detected" not in out:
            out["detected"] = at(e) - t0
        if "round_started" in e and e["round"] == 1:
            out["round 1 sent"] = at(e) - t0
        if e.get("worker_started", {}).get("rank") == 1 and e["round"] == 1:
            out["rank 1 started"] = at(e) - t0
    joined, ready = [], []
    for r in (0, 2, 3):
        with open(os.path.join(d, "job", "trace", f"rank-{r}.jsonl")) as f:
            for line in f:
                e = json.loads(line)
                if e.get("span") == "restart_in_process":
                    joined.append(e["ts"] / 1e6 - t0)
                    ready.append((e["ts"] + e["dur"]) / 1e6 - t0)
    if len(joined) == 3:
        out["kept: place taken"] = max(joined)
        out["kept: group, state"] = max(ready)
    return out


def same_params(d, clean):
    return all(filecmp.cmp(os.path.join(d, f"params{r}"), os.path.join(clean, f"params{r}"),
                           shallow=False) for r in range(4))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dlaunch", default=os.path.join(ROOT, "build", "bin", "dlaunch"))
    ap.add_argument("--worker", default=os.path.join(ROOT, "build", "bin", "dlaunch-worker"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--fault-step", type=int, default=25)
    ap.add_argument("--keep", action="store_true", help="keep the job directories")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    workdir = tempfile.mkdtemp(prefix="dlaunch-worker-inprocess-bench-")
    clean, _, _ = run(args, "respawn", False, False, workdir)
    variants = {"in_process": ("in_process", False), "respawn": ("respawn", False),
                "in_proc+warm": ("in_process", True)}
    rows = {name: [] for name in variants}
    for _ in range(args.reps):
        for name, (path, warm) in variants.items():
            d, t0, paths = run(args, path, warm, True, workdir)
            t = first_steps(d, t0)
            kept = max(t[r] for r in (0, 2, 3))
            row = journal_phases(d, t0)
            row.update({"kept": kept, "new": t[1], "all": max(kept, t[1]),
                        "same": same_params(d, clean), "paths": paths})
            rows[name].append(row)
            if not args.keep:
                shutil.rmtree(d, ignore_errors=True)
    print(f"fault -> first step of round 1, seconds (median, min-max over {args.reps} runs); "
          f"load average before: {load:.1f}, after: {os.getloadavg()[0]:.1f}")
    print(f"{'path':12s} {'kept ranks':>18s} {'new rank 1':>18s} {'every rank':>18s}  "
          "params = uninterrupted")
    for path, results in rows.items():
        cells = []
        for key in ("kept", "new", "all"):
            v = [r[key] for r in results]
            cells.append(f"{statistics.median(v):5.2f} ({min(v):.2f}-{max(v):.2f})")
        same = sum(r["same"] for r in results)
        print(f"{path:12s} {cells[0]:>18s} {cells[1]:>18s} {cells[2]:>18s}  "
              f"{same} of {len(results)}")
        print(f"{'':12s} journal (last run): {results[-1]['paths']}")
    print("phases, seconds from the fault (median, min-max)")
    for phase in ("detected", "round 1 sent", "rank 1 started", "kept: place taken",
                  "kept: group, state", "all"):
        cells = []
        for path, results in rows.items():
            v = [r[phase] for r in results if phase in r]
            cells.append(f"{statistics.median(v):5.2f} ({min(v):.2f}-{max(v):.2f})" if v else "-")
        print(f"  {phase:20s} " + "  ".join(f"{p}: {c:18s}" for p, c in zip(rows, cells)))
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
