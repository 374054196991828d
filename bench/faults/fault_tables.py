"""The table of fault_bench.py: per scenario and launcher, p50 / p99 of every time, how many runs
noticed the fault, named the right root cause and left orphans (Summarize, PrintTable), and the
results of an earlier run read back (LoadResults). Python standard library only.
"""
import json
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fault_run import NODES, NPROC  # noqa: E402


def Pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def Fmt(x):
    return "-" if x is None else f"{x:.3f}"


def Summarize(results, kind, scenario, cap):
    rs = [r for r in results if r["kind"] == kind and r["scenario"] == scenario]
    if not rs:
        return None
    def Col(key):
        xs = [r[key] for r in rs if key in r and r[key] <= cap]
        return f"{Fmt(Pct(xs, 0.5))} / {Fmt(Pct(xs, 0.99))}" if xs else "-"
    judged = [r for r in rs if "cause_ok" in r]
    cause = f"{100 * sum(r['cause_ok'] for r in judged) / len(judged):.0f}%" if judged else "n/a"
    detected = sum(bool(r.get("detected")) for r in rs)
    ended = sum(bool(r.get("ended")) for r in rs)
    return (f"| {scenario} | {kind} | {len(rs)} | {detected}/{len(rs)} | {Col('detect_s')} | "
            f"{Col('stop_s')} | {Col('all_stop_s')} | {Col('restart_s')} | "
            f"{Col('restart_after_detect_s')} | {cause} | "
            f"{sum(r.get('orphans', 0) for r in rs)} | {ended}/{len(rs)} |")


def MachineLine():
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{platform.node()}: {os.cpu_count()} CPUs ({cpu}), Linux {platform.release()}"


def PrintTable(results, args, versions):
    print(f"machine: {MachineLine()}")
    for line in versions:
        print(line)
    print(f"max_restarts {args.max_restarts}; {NODES} local nodes x {NPROC} ranks of fault_worker.py; "
          f"times in seconds from the fault, p50 / p99; cap {args.cap:g} s\n")
    print("| scenario | launcher | runs | noticed | detect | first peer SIGTERM | "
          "every peer SIGTERM | restart: fault -> round 1 running | restart: detection -> round 1 "
          "running | root cause right | orphans | launcher ended |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for scenario in args.scenarios:
        for kind in args.kinds:
            line = Summarize(results, kind, scenario, args.cap)
            if line:
                print(line)


def LoadResults(path):
    with open(path) as f:
        text = f.read()
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]
