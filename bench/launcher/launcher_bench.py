#!/usr/bin/python3
"""Start-up benchmark: `dlaunch run` vs torchrun (c10d rendezvous) on one machine.

For each node count N, both launchers start N local "nodes" with one worker each. The worker
(stamp_worker.sh) appends its wall-clock start time to a file and exits. Per run we record
  start_s  time from invoking the launcher(s) to the last worker's start stamp,
  wall_s   time from invoking the launcher(s) to the exit of the (last) launcher process,
  agent RSS: VmHWM / VmRSS of the per-node agent processes (dlaunch-agent, or the torchrun
           python process of each node), sampled from /proc while the job runs.
torchrun is started the way a multi-node job is: one torchrun process per node, all at once,
meeting at a c10d rendezvous endpoint on 127.0.0.1.

Configurations are interleaved (dlaunch N, torchrun N, dlaunch N, ...) so that a change in the
machine's load affects both alike; the table reports medians. With --baseline PATH, a second
dlaunch binary (an older build) runs interleaved with the first, and a second table compares the
two (start, exit, agent and launcher memory and threads); --baseline-flags gives the baseline
runs extra flags, so one binary can be compared with itself (TLS against --no-tls). Only the Python standard library
is used; run it with /usr/bin/python3 (see run.sh).
"""

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "stamp_worker.sh")
TORCH_PYTHON = "/usr/bin/python3"  # Debian's python3-torch lives here, not in a pyenv python.


def FindDlaunch(explicit):
    if explicit:
        return explicit
    for cand in (os.environ.get("DLAUNCH_BIN", ""), os.path.join(REPO, "build", "bin", "dlaunch")):
        if cand and os.access(cand, os.X_OK):
            return cand
    sys.exit("launcher_bench: dlaunch binary not found; pass --dlaunch PATH or set DLAUNCH_BIN")


def FreePort():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ReadStatus(pid):
    """Returns {VmHWM, VmRSS, Threads} (kB / count) of a live process, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            out = {}
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmHWM", "VmRSS", "Threads"):
                    out[key] = int(rest.split()[0])
            return out
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return None


def ProcTable():
    """Maps pid -> (ppid, comm) for every process."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # comm is parenthesised and may contain spaces; fields after the last ')' are fixed.
        lpar, rpar = stat.find("("), stat.rfind(")")
        table[int(name)] = (int(stat[rpar + 2:].split()[1]), stat[lpar + 1:rpar])
    return table


def Descendants(roots, table):
    children = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        for c in children.get(pid, []):
            out.append(c)
            todo.append(c)
    return out


def SmapsByMapping(pid):
    """Sums Rss (kB) of a process's mappings by what they map (library, [heap], anon, ...)."""
    sums, current = {}, None
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                first = line.split(maxsplit=1)[0]
                if "-" in first and not first.endswith(":"):
                    parts = line.split(maxsplit=5)
                    current = parts[5].strip() if len(parts) > 5 else "[anon]"
                    current = os.path.basename(current) if current.startswith("/") else current
                elif first == "Rss:" and current is not None:
                    sums[current] = sums.get(current, 0) + int(line.split()[1])
    except OSError:
        return {}
    return dict(sorted(((k, v) for k, v in sums.items() if v), key=lambda kv: -kv[1]))


def SmapsRollup(pid):
    """Returns Rss, Pss, Anonymous, Shared_Clean, Private_Dirty (kB) of a process."""
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("Rss", "Pss", "Anonymous", "Shared_Clean", "Private_Clean", "Private_Dirty"):
                    out[key] = int(rest.split()[0])
    except OSError:
        pass
    return out


class Sampler(threading.Thread):
    """Polls /proc for the agents of a run until stopped; keeps each agent's peak numbers."""

    def __init__(self, agent_pids_fn, launcher_pid=None, period_s=0.02, smaps_when=None):
        super().__init__(daemon=True)
        self.agent_pids_fn, self.launcher_pid, self.period_s = agent_pids_fn, launcher_pid, period_s
        self.smaps_when = smaps_when  # callable: True once the agents should be snapshotted
        self.agents = {}  # pid -> {"hwm": kB, "rss": kB, "threads": n}
        self.launcher = {"hwm": 0, "rss": 0, "threads": 0}
        self.smaps = None
        self.rollup = None
        self.stop = threading.Event()

    @staticmethod
    def _Merge(acc, st):
        acc["hwm"] = max(acc["hwm"], st.get("VmHWM", 0))
        acc["rss"] = max(acc["rss"], st.get("VmRSS", 0))
        acc["threads"] = max(acc["threads"], st.get("Threads", 0))

    def run(self):
        while not self.stop.is_set():
            for pid in self.agent_pids_fn():
                st = ReadStatus(pid)
                if st:
                    self._Merge(self.agents.setdefault(pid, {"hwm": 0, "rss": 0, "threads": 0}), st)
            if self.launcher_pid:
                st = ReadStatus(self.launcher_pid)
                if st:
                    self._Merge(self.launcher, st)
            if self.smaps is None and self.smaps_when is not None and self.agents and self.smaps_when():
                self.smaps = SmapsByMapping(min(self.agents))
                self.rollup = SmapsRollup(min(self.agents))
            self.stop.wait(self.period_s)

    def Peak(self):
        if not self.agents:
            return None
        return {k: max(a[k] for a in self.agents.values()) for k in ("hwm", "rss", "threads")}


def Stamps(path):
    try:
        with open(path) as f:
            return [float(line.split()[1]) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def KillGroups(procs):
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for p in procs:
        p.wait()


def RunOnce(kind, n, args, workdir, sleep_s=None):
    """Runs one job of N nodes with one launcher; returns a result dict (ok, start_s, wall_s, rss...)."""
    tag = f"{kind}-n{n}-{time.monotonic_ns()}"
    stamps = os.path.join(workdir, tag + ".stamps")
    log = open(os.path.join(workdir, tag + ".log"), "w")
    env = dict(os.environ, DLAUNCH_BENCH_STAMPS=stamps)
    env.pop("DLAUNCH_BENCH_SLEEP", None)
    if sleep_s is not None:
        env["DLAUNCH_BENCH_SLEEP"] = str(sleep_s)

    if kind in ("dlaunch", "baseline"):
        binary = args.dlaunch if kind == "dlaunch" else args.baseline
        extra = args.baseline_flags.split() if kind == "baseline" else []
        cmds = [[binary, "run", "--nnodes", str(n), "--nproc-per-node", "1",
                 "--heartbeat", str(args.heartbeat), "--job-root", os.path.join(workdir, "runs")]
                + extra + ["--", WORKER]]
    else:
        port, rid = FreePort(), tag
        cmds = [[TORCH_PYTHON, "-m", "torch.distributed.run", "--rdzv_backend=c10d",
                 f"--rdzv_endpoint=127.0.0.1:{port}", f"--rdzv_id={rid}", f"--nnodes={n}",
                 "--nproc_per_node=1", "--redirects=9:0", "--tee=9:0", "--no_python", WORKER]
                for _ in range(n)]

    t0 = time.time()
    procs = [subprocess.Popen(c, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              start_new_session=True) for c in cmds]
    roots = [p.pid for p in procs]
    # With a sleeping worker, look inside an agent once every worker runs (torchrun's agent is
    # still importing torch long before that).
    smaps_when = (lambda: len(Stamps(stamps)) >= n) if sleep_s else None
    if kind != "torchrun":
        def AgentPids():
            table = ProcTable()
            return [pid for pid in Descendants(roots, table) if table[pid][1] == "dlaunch-agent"]
        sampler = Sampler(AgentPids, launcher_pid=roots[0], smaps_when=smaps_when)
    else:
        sampler = Sampler(lambda: roots, smaps_when=smaps_when)
    sampler.start()

    deadline = time.monotonic() + args.timeout
    codes, exited = [None] * len(procs), [None] * len(procs)
    while any(c is None for c in codes) and time.monotonic() < deadline:
        for i, p in enumerate(procs):
            if codes[i] is None and p.poll() is not None:
                codes[i], exited[i] = p.returncode, time.time()
        time.sleep(0.005)
    timed_out = any(c is None for c in codes)
    sampler.stop.set()
    sampler.join()
    KillGroups(procs)
    log.close()

    starts = Stamps(stamps)
    ok = not timed_out and all(c == 0 for c in codes) and len(starts) == n
    res = {"kind": kind, "n": n, "ok": ok, "codes": codes, "timed_out": timed_out,
           "workers_stamped": len(starts),
           "start_s": (max(starts) - t0) if starts else None,
           "first_start_s": (min(starts) - t0) if starts else None,
           "wall_s": (max(e for e in exited if e) - t0) if any(exited) else None,
           "agent_peak_kb": sampler.Peak(), "launcher_peak_kb": sampler.launcher if kind != "torchrun" else None,
           "smaps_kb": sampler.smaps, "rollup_kb": sampler.rollup, "log": log.name}
    if kind != "torchrun":
        res["events"] = DlaunchEvents(os.path.join(workdir, "runs"))
    return res


def DlaunchEvents(job_root):
    """Returns the launcher's own elapsed_s / wall_time_s of the newest job under job_root."""
    try:
        jobs = sorted((os.path.join(job_root, d) for d in os.listdir(job_root)), key=os.path.getmtime)
    except FileNotFoundError:
        return {}
    out = {}
    if not jobs:
        return out
    try:
        with open(os.path.join(jobs[-1], "events.jsonl")) as f:
            for line in f:
                ev = json.loads(line)
                if "workers_started" in ev:
                    out["workers_started_s"] = ev["workers_started"].get("elapsed_s")
                elif "job_finished" in ev:
                    out["job_finished_s"] = ev["job_finished"].get("wall_time_s")
    except (OSError, ValueError):
        pass
    shutil.rmtree(jobs[-1], ignore_errors=True)
    return out


def Median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def Fmt(x, unit="", digits=2):
    return "–" if x is None else f"{x:.{digits}f}{unit}"


def Ratio(a, b):
    return "–" if a is None or b is None or b == 0 else f"{a / b:.0f}x" if a / b >= 10 else f"{a / b:.1f}x"


def MachineLine():
    model = "unknown CPU"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{model}, {os.cpu_count()} CPUs, {platform.release()}; load average {load}"


def PrintBaselineTable(results, nodes, args):
    """dlaunch (this build) against --baseline, medians of the interleaved runs."""
    def Med(kind, n, key, rss_runs=False):
        rs = [r for r in results if r["kind"] == kind and r["n"] == n and r["ok"] and (rss_runs or not r["rss_run"])]
        return Median([key(r) for r in rs]), len(rs)

    def Peak(kind, n, key):
        vals = [key(r) for r in results if r["kind"] == kind and r["n"] == n and r["ok"]]
        vals = [v for v in vals if v]
        return max(vals) if vals else None

    print()
    print(f"baseline: {args.baseline} {args.baseline_flags}".rstrip())
    print()
    print("| nodes | all started (s) | baseline (s) | ratio | exit (s) | baseline (s) | ratio "
          "| agent max RSS MB (this/baseline) | launcher max RSS MB | launcher max threads | runs |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in nodes:
        ds, dn = Med("dlaunch", n, lambda r: r["start_s"])
        bs, bn = Med("baseline", n, lambda r: r["start_s"])
        dw, _ = Med("dlaunch", n, lambda r: r["wall_s"])
        bw, _ = Med("baseline", n, lambda r: r["wall_s"])
        a = [Peak(k, n, lambda r: (r["agent_peak_kb"] or {}).get("hwm")) for k in ("dlaunch", "baseline")]
        lr = [Peak(k, n, lambda r: (r["launcher_peak_kb"] or {}).get("hwm")) for k in ("dlaunch", "baseline")]
        lt = [Peak(k, n, lambda r: (r["launcher_peak_kb"] or {}).get("threads")) for k in ("dlaunch", "baseline")]
        mb = lambda x: Fmt(x / 1024 if x else None, digits=1)
        print(f"| {n} | {Fmt(ds)} | {Fmt(bs)} | {Fmt(ds / bs if ds and bs else None)} "
              f"| {Fmt(dw)} | {Fmt(bw)} | {Fmt(dw / bw if dw and bw else None)} "
              f"| {mb(a[0])} / {mb(a[1])} | {mb(lr[0])} / {mb(lr[1])} | {lt[0]} / {lt[1]} | {dn}/{bn} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="1,2,4,8,16,32", help="comma-separated node counts")
    ap.add_argument("--reps", type=int, default=5, help="dlaunch repetitions per node count")
    ap.add_argument("--torchrun-reps", type=int, default=3, help="torchrun repetitions per node count")
    ap.add_argument("--torchrun-reps-large", type=int, default=1,
                    help="torchrun repetitions for node counts >= --large (it is slow there)")
    ap.add_argument("--large", type=int, default=16, help="node count from which --torchrun-reps-large applies")
    ap.add_argument("--rss-sleep", type=float, default=3.0,
                    help="seconds the worker sleeps in the one RSS run per launcher and node count (0: none)")
    ap.add_argument("--no-torchrun", action="store_true", help="measure dlaunch only")
    ap.add_argument("--dlaunch", help="dlaunch binary (default: $DLAUNCH_BIN, else build/bin/dlaunch)")
    ap.add_argument("--baseline", help="a second dlaunch binary to compare with, run interleaved")
    ap.add_argument("--baseline-flags", default="",
                    help="extra `dlaunch run` flags of the baseline runs, e.g. --no-tls with the same binary")
    ap.add_argument("--heartbeat", type=float, default=0.5, help="dlaunch --heartbeat")
    ap.add_argument("--timeout", type=float, default=300, help="per-run limit in seconds")
    ap.add_argument("--json", help="also write every run's raw result to this file")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory (logs, stamps)")
    args = ap.parse_args()
    args.dlaunch = os.path.abspath(FindDlaunch(args.dlaunch))
    if args.baseline:
        args.baseline = os.path.abspath(args.baseline)
    nodes = [int(x) for x in args.nodes.split(",") if x]
    torchrun = not args.no_torchrun
    if torchrun and subprocess.run([TORCH_PYTHON, "-c", "import torch.distributed.run"],
                                   capture_output=True).returncode != 0:
        sys.exit(f"launcher_bench: {TORCH_PYTHON} cannot import torch.distributed.run (install python3-torch)"
                 " or pass --no-torchrun")

    workdir = tempfile.mkdtemp(prefix="dlaunch-launcher-bench-")
    machine_before = MachineLine()
    print(f"# machine: {machine_before}", file=sys.stderr)
    results = []

    def Do(kind, n, **kw):
        r = RunOnce(kind, n, args, workdir, **kw)
        results.append(dict(r, rss_run=bool(kw)))
        peak = r["agent_peak_kb"] or {}
        print(f"# {kind:8s} n={n:<3d} {'ok  ' if r['ok'] else 'FAIL'} start {Fmt(r['start_s'])} s"
              f"  wall {Fmt(r['wall_s'])} s  agent HWM {peak.get('hwm', 0) / 1024:.1f} MB"
              f"{'' if r['ok'] else '  log: ' + r['log']}", file=sys.stderr, flush=True)
        return r

    for n in nodes:
        t_reps = args.torchrun_reps_large if n >= args.large else args.torchrun_reps
        for i in range(max(args.reps, t_reps if torchrun else 0)):
            if i < args.reps:
                Do("dlaunch", n)
                if args.baseline:
                    Do("baseline", n)
            if torchrun and i < t_reps:
                Do("torchrun", n)
        if args.rss_sleep > 0:
            Do("dlaunch", n, sleep_s=args.rss_sleep)
            if args.baseline:
                Do("baseline", n, sleep_s=args.rss_sleep)
            if torchrun:
                Do("torchrun", n, sleep_s=args.rss_sleep)

    machine_after = MachineLine()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine_before": machine_before, "machine_after": machine_after,
                       "dlaunch": args.dlaunch, "results": results}, f, indent=1)

    def Summary(kind, n):
        timed = [r for r in results if r["kind"] == kind and r["n"] == n and r["ok"] and not r["rss_run"]]
        every = [r for r in results if r["kind"] == kind and r["n"] == n and r["ok"]]
        fails = sum(1 for r in results if r["kind"] == kind and r["n"] == n and not r["ok"])
        hwm = max((r["agent_peak_kb"]["hwm"] for r in every if r["agent_peak_kb"]), default=None)
        return {"start": Median([r["start_s"] for r in timed]), "wall": Median([r["wall_s"] for r in timed]),
                "runs": len(timed), "fails": fails, "hwm_mb": hwm / 1024 if hwm else None}

    print(f"machine: {machine_before} (after: load average {machine_after.rsplit('average ', 1)[-1]})")
    print(f"dlaunch: {args.dlaunch} run --nnodes N --nproc-per-node 1 --heartbeat {args.heartbeat} -- stamp_worker.sh")
    if torchrun:
        print("torchrun: N x /usr/bin/python3 -m torch.distributed.run --rdzv_backend=c10d "
              "--rdzv_endpoint=127.0.0.1:PORT --rdzv_id=ID --nnodes=N --nproc_per_node=1 "
              "--redirects=9:0 --tee=9:0 --no_python stamp_worker.sh")
    print()
    print("| nodes | dlaunch: all started (s) | torchrun: all started (s) | ratio "
          "| dlaunch: exit (s) | torchrun: exit (s) | ratio "
          "| dlaunch agent max RSS (MB) | torchrun agent max RSS (MB) | runs (dlaunch/torchrun) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in nodes:
        d = Summary("dlaunch", n)
        t = Summary("torchrun", n) if torchrun else {"start": None, "wall": None, "runs": 0, "fails": 0,
                                                       "hwm_mb": None}
        runs = f"{d['runs']}/{t['runs']}" + (f" ({d['fails']}/{t['fails']} failed)" if d["fails"] or t["fails"] else "")
        print(f"| {n} | {Fmt(d['start'])} | {Fmt(t['start'])} | {Ratio(t['start'], d['start'])} "
              f"| {Fmt(d['wall'])} | {Fmt(t['wall'])} | {Ratio(t['wall'], d['wall'])} "
              f"| {Fmt(d['hwm_mb'], digits=1)} | {Fmt(t['hwm_mb'], digits=1)} | {runs} |")

    if args.baseline:
        PrintBaselineTable(results, nodes, args)
    print()
    for kind in ("dlaunch", "torchrun"):
        smaps = [r for r in results if r["kind"] == kind and r["smaps_kb"]]
        if not smaps:
            continue
        r = smaps[-1]
        top = ", ".join(f"{k} {v / 1024:.1f}" for k, v in list(r["smaps_kb"].items())[:10])
        roll = ", ".join(f"{k} {v / 1024:.1f}" for k, v in (r["rollup_kb"] or {}).items())
        print(f"{kind} agent (one of {r['n']} nodes, all workers running) resident MB: {roll}; "
              f"threads {r['agent_peak_kb']['threads']}")
        print(f"  largest mappings (Rss MB): {top}")
        if kind == "dlaunch":
            print(f"  dlaunch launcher max RSS {r['launcher_peak_kb']['hwm'] / 1024:.1f} MB")
    if args.keep:
        print(f"\nscratch: {workdir}", file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
