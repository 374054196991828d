"""Restart, phase by phase: one fault in the goodput bench's real PyTorch 2.x DDP job
(ddp_job.py, CPU, gloo, a checkpoint every --ckpt-every steps), from the fault to every rank of
the next round through its first step, under each launcher, runs interleaved.

Kinds: dlaunch (respawn), dlaunch-warm (restarts.warm_start: on: ranks started anew fork from
the node's warm process), dlaunch-inprocess (restart: in_process: the ranks left keep their
process, ddp_job.py --in-process), dlaunch-inprocess-warm (both), torchrun2, ft_launcher
(bench/compare/venv.sh's venv), nvrx (nvidia-resiliency-ext's inprocess.Wrapper around the same
training function, under its ft_launcher with --ft-restart-policy=min-healthy). A kept rank
stamps start and imported when it is called again. Faults: crash
(rank 1 SIGKILLed), node (the agent, or torchrun, of rank 2 and everything under it SIGKILLed;
the job goes on with the nodes left, or with a spare under dlaunch with --spares 1).

For each run, seconds from the fault to the last rank of the next round reaching each stamp
(ddp_job.py: start = the process's start, imported = `import torch` done, pg = the process group
formed, loaded = model, DDP and checkpoint), and to rank 0's first step of that round (a DDP step
is a collective: every rank has done it within the step's time). Medians per kind and fault.

  restart_phases.py [--kinds dlaunch,dlaunch-warm,dlaunch-inprocess,dlaunch-inprocess-warm,
                            torchrun2,ft_launcher,nvrx] [--faults crash,node]
                    [--nodes 2] [--spares 0] [--reps 3] [--worker-store rank0|agent]
                    [--json out.json]
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import goodput_bench  # noqa: E402
from goodput_bench import ROOT, Run  # noqa: E402
from fault_run import WaitFor  # noqa: E402

PHASES = ("start", "imported", "pg", "loaded")


def Phases(records, fault_t, ranks):
    """Seconds from the fault to the last rank of round 1 at each stamp; rank 0's first step."""
    out = {}
    for e in PHASES:
        ts = [r["t"] for r in records if r["round"] == 1 and r["e"] == e]
        got = {r["rank"] for r in records if r["round"] == 1 and r["e"] == e}
        out[e] = max(ts) - fault_t if ts and len(got) >= ranks else None
    steps = [r["t"] for r in records if r["round"] == 1 and r["e"] == "step" and r["rank"] == 0]
    out["first step"] = min(steps) - fault_t if steps else None
    return out


def RunOnce(kind, fault, args, workdir):
    run = Run(kind, args, workdir)
    run.Start()
    try:
        if not WaitFor(lambda: run.Stepping(0) or not run.Running(), 300, period=0.2):
            return {"kind": kind, "fault": fault, "error": "round 0 never stepped"}
        time.sleep(args.settle)  # the warm process (or nothing) gets ready meanwhile
        if not run.Running() or not run.Inject(fault):
            return {"kind": kind, "fault": fault, "error": "the job ended before the fault"}
        fault_t = run.faults[0][1]
        ok = WaitFor(lambda: run.Stepping(1) or not run.Running(), args.limit, period=0.1)
        if ok and run.Running():
            time.sleep(0.5)  # the other ranks' stamps of that step's round
        left = args.nodes - (1 if fault == "node" and not args.spares else 0)
        row = Phases(run.Records(), fault_t, left * goodput_bench.NPROC)
        row.update(kind=kind, fault=fault, dir=run.dir)
        return row
    finally:
        run.Cleanup()


def Median(rows, key):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return (statistics.median(vals), len(vals)) if vals else (None, 0)


def PrintTable(rows, args):
    print(f"\nFault -> the last rank of the next round at each phase ({args.nodes} nodes x "
          f"{goodput_bench.NPROC} ranks, spares {args.spares}; medians over the runs that "
          "reached it; s):\n")
    cols = ("start", "imported", "pg", "loaded", "first step")
    print("| launcher | fault | runs | " + " | ".join(cols) + " |")
    print("|---|---|---|" + "---|" * len(cols))
    for kind in args.kinds:
        for fault in args.faults:
            mine = [r for r in rows if r["kind"] == kind and r["fault"] == fault]
            if not mine:
                continue
            cells = []
            for c in cols:
                m, n = Median(mine, c)
                cells.append("-" if m is None else f"{m:.2f}" + ("" if n == len(mine) else f" ({n})"))
            print(f"| {kind} | {fault} | {len(mine)} | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kinds", default="dlaunch,dlaunch-warm,dlaunch-inprocess,"
                    "dlaunch-inprocess-warm,torchrun2,ft_launcher")
    ap.add_argument("--faults", default="crash,node")
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--spares", type=int, default=0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--ckpt-every", type=int, default=10)
    ap.add_argument("--settle", type=float, default=8, help="s of stepping before the fault")
    ap.add_argument("--limit", type=float, default=90, help="s from the fault to give up")
    ap.add_argument("--stall-timeout", type=int, default=30)
    ap.add_argument("--pg-timeout", type=float, default=60)
    ap.add_argument("--max-restarts", type=int, default=3)
    ap.add_argument("--venv", default=os.path.join(ROOT, "build-compare", "venv"))
    ap.add_argument("--dlaunch", default=os.path.join(ROOT, "build", "bin", "dlaunch"))
    ap.add_argument("--shared-store", action="store_true")
    ap.add_argument("--worker-store", default="rank0", choices=("rank0", "agent"),
                    help="dlaunch's rendezvous.worker_store")
    ap.add_argument("--json")
    ap.add_argument("--keep", action="store_true", help="keep the runs' folders")
    args = ap.parse_args()
    args.kinds = args.kinds.split(",")
    args.faults = args.faults.split(",")
    args.python = os.path.join(args.venv, "bin", "python")
    rows = []
    workdir = tempfile.mkdtemp(prefix="restart-phases-")
    try:
        for rep in range(args.reps):
            for fault in args.faults:
                for kind in args.kinds:  # interleaved: the machine's load hits every kind alike
                    row = RunOnce(kind, fault, args, workdir)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    PrintTable(rows, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": {k: v for k, v in vars(args).items()}, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
