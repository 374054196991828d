#!/usr/bin/env python3
"""What the preflight costs (docs/preflight.md).

1. Per node: `dlaunch doctor --nnodes N -- CMD` for each command and N, the slowest check and
   the whole command's wall time. The checks of all nodes run at once, so on one machine N local
   agents also compete for its cores (on a cluster each node has its own).
2. Start-up with and without it: `dlaunch run --nnodes N -- true`, interleaved runs with and
   without --no-preflight, median wall time of each and their ratio.
3. With --torch-job: a whole 5-step DDP job (five_step_ddp.py, gloo, 2 nodes x 2 ranks) whose
   preflight imports torch (preflight.import_check: import), only looks for it (the default:
   locate), or is off; interleaved, median wall time of each. --before-bin adds the same job
   run by another build's dlaunch (the one before the preflight stopped importing).

  preflight_bench.py --bin build/bin [--nodes 1,4,16] [--runs 11] [--python /usr/bin/python3]
                     [--torch-job [--before-bin OLD/bin]] [--only-torch-job]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


COMMANDS = [
    ("true", ["true"]),
    ("python3 (no import)", ["/usr/bin/python3", "-c", "pass"]),
    ("python3, import torch", ["/usr/bin/python3", "-c", "import torch"]),
]


def run(argv, cwd):
    start = time.monotonic()
    p = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return time.monotonic() - start, p.returncode, p.stdout


def slowest_check(output):
    m = re.search(r"slowest check ([0-9.]+) s on [^ ]+ \(([^:]+):", output)
    return (float(m.group(1)), m.group(2)) if m else (float("nan"), "?")


def doctor_table(dlaunch, nodes, runs, cwd):
    print("| command | nodes | slowest check, median (s) | slowest check's name | doctor wall, median (s) |")
    print("|---|---:|---:|---|---:|")
    for label, cmd in COMMANDS:
        for n in nodes:
            checks, walls, name = [], [], "?"
            for _ in range(runs):
                wall, code, out = run([dlaunch, "doctor", "--nnodes", str(n), "--job-root", cwd, "--"] + cmd, cwd)
                if code != 0:
                    sys.exit(f"doctor failed ({code}):\n{out}")
                s, name = slowest_check(out)
                checks.append(s)
                walls.append(wall)
            print(f"| `{label}` | {n} | {statistics.median(checks):.3f} | {name} | {statistics.median(walls):.3f} |")


def startup_table(dlaunch, nodes, runs, cwd):
    print()
    print("| nodes | `run -- true`, preflight on, median (s) | off, median (s) | on / off |")
    print("|---:|---:|---:|---:|")
    for n in nodes:
        on, off = [], []
        for _ in range(runs):  # interleaved, so drift on a shared machine hits both alike
            for flags, sink in (([], on), (["--no-preflight"], off)):
                wall, code, out = run([dlaunch, "run", "--nnodes", str(n), "--job-root", cwd] + flags + ["--", "true"], cwd)
                if code != 0:
                    sys.exit(f"run failed ({code}):\n{out}")
                sink.append(wall)
        m_on, m_off = statistics.median(on), statistics.median(off)
        print(f"| {n} | {m_on:.3f} | {m_off:.3f} | {m_on / m_off:.2f} |")


def torch_job_table(dlaunch, before, python, runs, cwd):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "five_step_ddp.py")
    base = f"command: [{python}, {script}]\nnodes: 2\nnproc_per_node: 2\n"
    jobs = {}
    for mode in ("import", "locate"):
        jobs[mode] = os.path.join(cwd, f"five-step-{mode}.yaml")
        with open(jobs[mode], "w") as f:
            f.write(base + f"preflight: {{import_check: {mode}}}\n")
    plain = os.path.join(cwd, "five-step.yaml")
    with open(plain, "w") as f:
        f.write(base)
    cells = [("preflight imports torch (import_check: import)", dlaunch, jobs["import"], []),
             ("preflight locates torch (default)", dlaunch, jobs["locate"], []),
             ("preflight off (--no-preflight)", dlaunch, plain, ["--no-preflight"])]
    if before:
        cells.insert(0, ("before: the preflight imported torch", before, plain, []))
    walls = {label: [] for label, *_ in cells}
    for _ in range(runs):  # interleaved, so drift on a shared machine hits every cell alike
        for label, binary, job, flags in cells:
            wall, code, out = run([binary, "run", job, "--job-root", cwd] + flags, cwd)
            if code != 0:
                sys.exit(f"{label}: run failed ({code}):\n{out}")
            walls[label].append(wall)
    off = statistics.median(walls[cells[-1][0]])
    print()
    print(f"5-step DDP job, 2 nodes x 2 ranks, {python}; runs per cell: {runs}")
    print()
    print("| preflight | wall, median (s) | min (s) | max (s) | against off |")
    print("|---|---:|---:|---:|---:|")
    for label, *_ in cells:
        w = walls[label]
        print(f"| {label} | {statistics.median(w):.2f} | {min(w):.2f} | {max(w):.2f} | "
              f"{statistics.median(w) / off:.2f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--nodes", default="1,4,16")
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--python", default="/usr/bin/python3", help="the job's interpreter, with torch")
    ap.add_argument("--torch-job", action="store_true", help="also time the 5-step DDP job")
    ap.add_argument("--only-torch-job", action="store_true", help="only the 5-step DDP job")
    ap.add_argument("--before-bin", help="another build's bin/, whose dlaunch runs the job too")
    args = ap.parse_args()
    dlaunch = os.path.abspath(os.path.join(args.bin, "dlaunch"))
    nodes = [int(n) for n in args.nodes.split(",")]
    with tempfile.TemporaryDirectory(prefix="preflight-bench-") as cwd:
        print(f"machine: {os.cpu_count()} cores; runs per cell: {args.runs}\n")
        if not args.only_torch_job:
            doctor_table(dlaunch, nodes, args.runs, cwd)
            startup_table(dlaunch, nodes, args.runs, cwd)
        if args.torch_job or args.only_torch_job:
            before = os.path.abspath(os.path.join(args.before_bin, "dlaunch")) if args.before_bin else None
            torch_job_table(dlaunch, before, args.python, args.runs, cwd)


if __name__ == "__main__":
    main()
