"""The tables of launcher_bench.py: medians and ratios to dlaunch of every kind and configuration
(Cell, Print*Table, PrintSmaps), one report of several --json files (MergeReports), and the
whole report as the benchmark prints it (PrintReport). Configurations are named NxM: N nodes of M
workers (ParseConfigs, ConfigName). Python standard library only.
"""

import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_sampler import DLAUNCH_KINDS  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ParseConfigs(text):
    """'1,2,4x2' -> [(1, 1), (2, 1), (4, 2)]: N nodes x M workers per node."""
    out = []
    for item in filter(None, text.split(",")):
        n, _, m = item.partition("x")
        out.append((int(n), int(m or 1)))
    return out


def ConfigName(n, m):
    return f"{n}x{m}"


def Median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def Fmt(x, unit="", digits=2):
    return "–" if x is None else f"{x:.{digits}f}{unit}"


def Ratio(a, b):
    return "–" if a is None or b is None or b == 0 else f"{a / b:.0f}x" if a / b >= 10 else f"{a / b:.1f}x"


def Cell(results, kind, config):
    """Medians of the timed runs, and memory peaks over every run, of one kind and configuration."""
    mine = [r for r in results if r["kind"] == kind and r["config"] == config]
    every = [r for r in mine if r["ok"]]
    timed = [r for r in every if not r["rss_run"]]
    agent_kb = [r["agent_peak_kb"]["hwm"] for r in every if r["agent_peak_kb"]]
    node = next((r["node_kb"] for r in reversed(every) if r.get("node_kb")), None)
    return {"start": Median([r["start_s"] for r in timed]), "wall": Median([r["wall_s"] for r in timed]),
            "cpu": Median([r.get("cpu_s") for r in timed]),
            "runs": len(timed), "fails": len(mine) - len(every), "node": node,
            "agent_mb": Median(agent_kb) / 1024 if agent_kb else None}


def PrintTimeTable(results, configs, kinds, key, title):
    print(f"{title} (median s; ratio = launcher / dlaunch)")
    print()
    print("| nodes x workers | " + " | ".join(kinds) + " |")
    print("|---:|" + "---:|" * len(kinds))
    for config in configs:
        d = Cell(results, "dlaunch", config)[key]
        cells = [Cell(results, k, config)[key] for k in kinds]
        print(f"| {config} | " + " | ".join(Fmt(c) if k == "dlaunch" else f"{Fmt(c)} ({Ratio(c, d)})"
                                             for k, c in zip(kinds, cells)) + " |")
    print()


def PrintMemoryTables(results, configs, kinds):
    def Table(title, fmt):
        print(title)
        print()
        print("| nodes x workers | " + " | ".join(kinds) + " |")
        print("|---:|" + "---:|" * len(kinds))
        for config in configs:
            print(f"| {config} | " + " | ".join(fmt(Cell(results, k, config)) for k in kinds) + " |")
        print()

    mb = lambda kb: Fmt(kb / 1024, digits=1)
    Table("Agent process per node: peak RSS (VmHWM, MB), largest over the nodes of a run, median over runs",
          lambda c: Fmt(c["agent_mb"], digits=1))
    Table("A node's launcher processes, all workers running (memory run): processes: distinct resident MB"
          " (summed RSS MB)", lambda c: f"{c['node']['procs']}: {mb(c['node']['unique']) if c['node']['unique'] else '–'} ({mb(c['node']['rss'])})"
          if c["node"] else "–")


def PrintRunsTable(results, configs, kinds):
    print("Timed runs per cell (failed runs in brackets)")
    print()
    print("| nodes x workers | " + " | ".join(kinds) + " |")
    print("|---:|" + "---:|" * len(kinds))
    for config in configs:
        cells = [Cell(results, k, config) for k in kinds]
        print(f"| {config} | " + " | ".join(f"{c['runs']}" + (f" ({c['fails']})" if c["fails"] else "")
                                             for c in cells) + " |")
    print()


def PrintBaselineTable(results, configs, baseline):
    """dlaunch (this build) against --baseline, medians of the interleaved runs."""
    def Peak(kind, config, part, key):
        vals = [(r[part] or {}).get(key) for r in results if r["kind"] == kind and r["config"] == config and r["ok"]]
        vals = [v for v in vals if v]
        return max(vals) if vals else None

    mb = lambda x: Fmt(x / 1024 if x else None, digits=1)
    print(f"baseline: {baseline}")
    print()
    print("| nodes x workers | all started (s) | baseline (s) | ratio | exit (s) | baseline (s) | ratio "
          "| agent max RSS MB (this/baseline) | launcher max RSS MB | launcher max threads | runs |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for config in configs:
        d, b = Cell(results, "dlaunch", config), Cell(results, "baseline", config)
        a = [Peak(k, config, "agent_peak_kb", "hwm") for k in DLAUNCH_KINDS]
        lr = [Peak(k, config, "launcher_peak_kb", "hwm") for k in DLAUNCH_KINDS]
        lt = [Peak(k, config, "launcher_peak_kb", "threads") for k in DLAUNCH_KINDS]
        ratio = lambda x, y: Fmt(x / y if x and y else None)
        print(f"| {config} | {Fmt(d['start'])} | {Fmt(b['start'])} | {ratio(d['start'], b['start'])} "
              f"| {Fmt(d['wall'])} | {Fmt(b['wall'])} | {ratio(d['wall'], b['wall'])} "
              f"| {mb(a[0])} / {mb(a[1])} | {mb(lr[0])} / {mb(lr[1])} | {lt[0]} / {lt[1]} "
              f"| {d['runs']}/{b['runs']} |")
    print()


def PrintSmaps(results, kinds):
    for kind in kinds:
        smaps = [r for r in results if r["kind"] == kind and r["smaps_kb"]]
        if not smaps:
            continue
        r = smaps[-1]
        top = ", ".join(f"{k} {v / 1024:.1f}" for k, v in list(r["smaps_kb"].items())[:10])
        roll = ", ".join(f"{k} {v / 1024:.1f}" for k, v in (r["rollup_kb"] or {}).items())
        print(f"{kind} agent process ({r['config']}, all workers running) resident MB: {roll}; "
              f"threads {r['agent_peak_kb']['threads']}")
        print(f"  largest mappings (Rss MB): {top}")
        if r.get("launcher_peak_kb"):
            print(f"  {kind} launcher max RSS {r['launcher_peak_kb']['hwm'] / 1024:.1f} MB")


def Unique(items):
    return list(dict.fromkeys(items))


def MergeReports(reports):
    """One report of several --json files (a run done in parts): their runs together, configurations
    ordered by workers per node, then nodes."""
    configs = Unique(c for r in reports for c in r["configs"])
    return {"machine_before": reports[0]["machine_before"], "machine_after": reports[-1]["machine_after"],
            "versions": Unique(v for r in reports for v in r["versions"]),
            "configs": sorted(configs, key=lambda c: tuple(reversed(ParseConfigs(c)[0]))),
            "kinds": Unique(k for r in reports for k in r["kinds"]), "baseline": reports[0].get("baseline"),
            "results": [x for r in reports for x in r["results"]]}


def PrintReport(report):
    results, configs, kinds = report["results"], report["configs"], report["kinds"]
    after = report["machine_after"].rsplit("average ", 1)[-1]
    print(f"machine: {report['machine_before']} (after: load average {after})")
    for line in report["versions"]:
        print(f"version: {line}")
    for kind in kinds + (["baseline"] if report.get("baseline") else []):
        first = next((r for r in results if r["kind"] == kind), None)
        if first:
            times = f"{first['launcher_processes']} x " if first["launcher_processes"] > 1 else ""
            cmd = " ".join(first["cmd"]).replace(REPO + os.sep, "")  # paths relative to the repository
            print(f"{kind}: {times}{cmd}")
    print()
    PrintTimeTable(results, configs, kinds, "start", "All workers started")
    PrintTimeTable(results, configs, kinds, "wall", "Whole job: until the last launcher process exits")
    PrintTimeTable(results, configs, kinds, "cpu", "CPU of the whole job: user + system s of the launcher"
                   " processes, their helpers and the workers")
    PrintMemoryTables(results, configs, kinds)
    PrintRunsTable(results, configs, kinds)
    if report.get("baseline"):
        PrintBaselineTable(results, configs, report["baseline"])
    PrintSmaps(results, kinds)
