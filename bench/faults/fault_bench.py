#!/usr/bin/python3
"""Fault benchmark: how fast dlaunch, torchrun and ft_launcher notice a fault, stop the other
ranks, restart, and whether they name the right rank and leave nothing behind.

Every scenario runs a job of 3 local nodes x 2 ranks of tests/cluster/fault_worker.py on this
machine and injects one fault into round 0. The launchers (--kinds):

  dlaunch      `dlaunch run` with 3 local agents
  torchrun2    3 torchrun processes of PyTorch 2.x (bench/compare/venv.sh's venv, --venv), c10d
               rendezvous on 127.0.0.1, as a multi-node job starts them
  ft_launcher  the same with nvidia-resiliency-ext's ft_launcher, its rank heartbeats on in the
               worker (fault_worker.py --ft-heartbeats) and limits near dlaunch's: checked every
               1 s, 3 s without a heartbeat is a hang, SIGTERM to the hung rank (FT_LAUNCHER_ARGS)
  torchrun     Debian's torchrun 1.13 (/usr/bin/python3), the history's comparison

Beside a 2.x launcher, dlaunch's workers run on the venv's Python too. For a lost node every
launcher may go on with 2 (dlaunch nodes "2:3", torchrun --nnodes=2:3). The worker appends
timestamped lines (start, barrier, sigterm, the fault, done) to a stamp file under every
launcher, and the injector notes the time of the faults it makes, so the numbers are:

  detect   fault -> the launcher's own record of it: dlaunch's first failure_detected event
           (events.jsonl); torchrun's and ft_launcher's first log line of a failed worker, a
           missed heartbeat or a stop (millisecond stamps)
  stop     fault -> the first SIGTERM another rank receives, and the last: every rank that
           should stop was told (a faulty node's own ranks do not count)
  restart  fault -> every rank of round 1 started (with --max-restarts >= 1), and the same from
           the detection; a torchrun node that did not fail restarts its workers with
           TORCHELASTIC_RESTART_COUNT unchanged, so under torchrun and ft_launcher the worker
           counts its rounds itself (--round-from-stamps)
  cause    the root cause named is the injected one (dlaunch: the first root_cause event,
           class and rank or node; torchrun: the "Root Cause" rank of its error report, printed
           only when it gives up; ft_launcher: that, or the rank its rank monitor reports
           without heartbeats)
  orphans  processes of the job alive 5 s after the launcher ended (must be 0); a launcher
           still running at the cap counts as "not ended" instead

A fault a launcher does not notice within --cap seconds counts as "not detected"; everything of
that run is then killed --cap + 10 s after the fault. Run with /usr/bin/python3.

  fault_bench.py [--kinds dlaunch,torchrun2,ft_launcher] [--reps 20] [--torchrun-reps 10]
                 [--max-restarts 0|1] [--scenarios a,b] [--cap 20] [--dlaunch build/bin/dlaunch]
                 [--venv build-compare/venv] [--json FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# One run, its measurement and the table are modules beside this file, found from any working
# directory.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fault_measure import Measure  # noqa: E402
from fault_run import KINDS, PYTHON, ROOT, SCENARIOS, TORCHRUN_UNDETECTED, Run  # noqa: E402
from fault_tables import LoadResults, PrintTable  # noqa: E402


def RunOnce(kind, scenario, args, workdir):
    run = Run(kind, scenario, args, args.dlaunch, workdir)
    run.Start()
    try:
        injected = run.Inject()
        finished = run.Wait() if injected else False
        result = Measure(run, finished) if injected else {"kind": kind, "scenario": scenario,
                                                          "error": "could not inject"}
    finally:
        run.Cleanup()
    return result


def ParseArgs():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kinds", default="dlaunch,torchrun2,ft_launcher",
                    help=f"launchers, of {','.join(KINDS)} (torchrun: Debian's 1.13)")
    ap.add_argument("--reps", type=int, default=20, help="dlaunch's runs per scenario")
    ap.add_argument("--torchrun-reps", type=int, default=None,
                    help="the other launchers' runs per scenario (default: --reps)")
    ap.add_argument("--torchrun-reps-undetected", type=int, default=3,
                    help="torchrun 1.13's runs of the faults it does not notice (each waits --cap)")
    ap.add_argument("--no-torchrun", action="store_true", help="dlaunch alone (as --kinds dlaunch)")
    ap.add_argument("--max-restarts", type=int, default=0)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--cap", type=float, default=20, help="seconds after which a fault counts as not detected")
    ap.add_argument("--dlaunch", default=os.path.join(ROOT, "build", "bin", "dlaunch"))
    ap.add_argument("--venv", default=os.path.join(ROOT, "build-compare", "venv"),
                    help="bench/compare/venv.sh's venv: PyTorch 2.x and nvidia-resiliency-ext")
    ap.add_argument("--json", default="", help="also write every run's measurements here")
    ap.add_argument("--table-from", default="",
                    help="print the table of an earlier run's --json file, or of its stderr (one "
                         "run a line), instead of running")
    args = ap.parse_args()
    args.kinds = [k for k in args.kinds.split(",") if k and not (args.no_torchrun and k != "dlaunch")]
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    args.venv_python = os.path.join(args.venv, "bin", "python")
    args.venv_ft_launcher = os.path.join(args.venv, "bin", "ft_launcher")
    # Beside the 2.x launchers, dlaunch's workers run on the venv's Python too.
    args.venv_worker = bool({"torchrun2", "ft_launcher"} & set(args.kinds))
    if args.torchrun_reps is None:
        args.torchrun_reps = args.reps
    return args


def Check(args):
    """Exits with a message when a scenario, a launcher or what it needs is missing."""
    for what, names, known in (("scenario", args.scenarios, SCENARIOS), ("launcher", args.kinds, KINDS)):
        for name in names:
            if name not in known:
                sys.exit(f"fault_bench: unknown {what} {name!r}; known: {', '.join(known)}")
    if "dlaunch" in args.kinds and not os.access(args.dlaunch, os.X_OK):
        sys.exit(f"fault_bench: {args.dlaunch} is not built (scripts/build.sh dlaunch dlaunch-agent)")
    needs = {"torchrun": (PYTHON, "import torch.distributed.run"),
             "torchrun2": (args.venv_python, "import torch.distributed.run"),
             "ft_launcher": (args.venv_python, "import nvidia_resiliency_ext.fault_tolerance")}
    for kind in args.kinds:
        if kind in needs and subprocess.run([needs[kind][0], "-c", needs[kind][1]],
                                            capture_output=True).returncode != 0:
            sys.exit(f"fault_bench: {needs[kind][0]} cannot {needs[kind][1]} (for {kind}; "
                     "bench/compare/venv.sh makes the venv, or leave it out of --kinds)")


def Versions(args):
    """What ran: dlaunch's version and commit, each Python's PyTorch and nvidia-resiliency-ext."""
    def Out(cmd):
        done = subprocess.run(cmd, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else "?"
    probe = ("import sys, torch, importlib.metadata as m; v = sys.version.split()[0]; "
             "print(f'Python {v}, torch {torch.__version__}', end=''); "
             "print(', nvidia-resiliency-ext', m.version('nvidia-resiliency-ext')) "
             "if {ft} else print()")
    lines = []
    if "dlaunch" in args.kinds:
        commit = Out(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
        lines.append(f"{Out([args.dlaunch, '--version'])} (commit {commit})")
    if "torchrun" in args.kinds:
        lines.append("torchrun: " + Out([PYTHON, "-c", probe.replace("{ft}", "False")]))
    if args.venv_worker:
        ft = "ft_launcher" in args.kinds
        lines.append("venv (torchrun2, ft_launcher, workers): " +
                     Out([args.venv_python, "-c", probe.replace("{ft}", str(ft))]))
    return lines


def RepsFor(kind, scenario, args):
    if kind == "dlaunch":
        return args.reps
    if not SCENARIOS[scenario][3]:
        return 0
    if kind == "torchrun" and scenario in TORCHRUN_UNDETECTED:
        return args.torchrun_reps_undetected
    return args.torchrun_reps


def main():
    args = ParseArgs()
    if args.table_from:
        PrintTable(LoadResults(args.table_from), args, Versions(args))
        return
    Check(args)
    versions = Versions(args)  # what runs, before the checkout moves on
    workdir = tempfile.mkdtemp(prefix="fault-bench-")
    results = []
    # Interleaved: each scenario's i-th run of every launcher, then the next round of them.
    for scenario in args.scenarios:
        reps = {kind: RepsFor(kind, scenario, args) for kind in args.kinds}
        for i in range(max(reps.values())):
            for kind in (k for k in args.kinds if i < reps[k]):
                r = RunOnce(kind, scenario, args, workdir)
                results.append(r)
                print(json.dumps(r), file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    PrintTable(results, args, versions)


if __name__ == "__main__":
    main()
