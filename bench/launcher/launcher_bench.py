#!/usr/bin/python3
"""Start-up benchmark: `dlaunch run` against today's launchers, local nodes on one machine.

For each configuration NxM (N local "nodes", M workers each) every launcher kind starts the same
trivial worker (stamp_worker.sh), which appends its wall-clock start time to a file and exits.
Per run we record
  start_s   time from invoking the launcher(s) to the last worker's start stamp,
  wall_s    time from invoking the launcher(s) to the exit of the last launcher process,
  cpu_s     user + system CPU of the whole job (from wait4: each launcher process and every
            descendant it waited for),
  agent     the peak RSS (VmHWM) of each node's agent process, polled from /proc every 20 ms (the
            largest over a run's nodes; the table gives the median over runs), and
  per node  in one run per kind and configuration whose workers sleep (--rss-sleep), once every
            worker runs: the node's launcher processes (its agent and the agent's helpers, never
            the workers), their summed RSS, and the distinct physical pages they map together
            (from /proc/PID/pagemap; needs root, else only the sum): a page shared by a forked
            helper and its agent, or by two processes mapping one library, counts once.
Kinds (--kinds):
  dlaunch      `dlaunch run --nnodes N --nproc-per-node M`: one launcher forks one dlaunch-agent
               per node; the agents join it over gRPC on 127.0.0.1.
  torchrun2    the venv's `python -m torch.distributed.run`, one per node, all at once, meeting at
               a c10d rendezvous on 127.0.0.1, the way a multi-node job starts it.
  ft_launcher  the venv's ft_launcher (nvidia-resiliency-ext, a torchrun fork) the same way, with
               its defaults (no fault-tolerance config file).
  deepspeed    the venv's `deepspeed` runner, one per node with --no_ssh --node_rank I and a
               hostfile of N hosts with M slots: a static launch, there is no rendezvous.
  torchx       the venv's `torchx run -s local_cwd` of torchx_component.py:ddp_no_python (dist.ddp
               with torchrun's --no_python), -j NxM: the local scheduler starts one torchrun per node.
  torchrun1    Debian's python3-torch 1.13 torchrun (/usr/bin/python3), as the first table had it.
Runs are interleaved (every kind once, then again) so that a change in the machine's load affects
all alike; the tables report medians and ratios to dlaunch. With --baseline PATH, a second dlaunch
binary (an older build) runs interleaved with the first, and a second table compares the two;
--baseline-flags gives the baseline runs extra flags, so one binary can be compared with itself.
Only the Python standard library is used; run it with /usr/bin/python3 (see run.sh).
"""

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

# The /proc sampling and the tables are modules beside this file, found from any working directory.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_sampler import DLAUNCH_KINDS, Sampler  # noqa: E402
from report_tables import ConfigName, Fmt, MergeReports, ParseConfigs, PrintReport  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "stamp_worker.sh")
TORCHX_COMPONENT = os.path.join(HERE, "torchx_component.py") + ":ddp_no_python"
TORCH1_PYTHON = "/usr/bin/python3"  # Debian's python3-torch (1.13) lives here, not in a venv.
DEFAULT_VENV = "build-compare/venv"  # made by bench/compare/venv.sh, relative to the repository
OTHER_KINDS = ("torchrun2", "ft_launcher", "deepspeed", "torchx", "torchrun1")
VENV_PACKAGES = ("torch", "nvidia-resiliency-ext", "deepspeed", "torchx")


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


# ---------------------------------------------------------------------------------------------
# The command lines of each launcher kind.

def VenvBin(args, name):
    return os.path.join(args.venv, "bin", name)


def DlaunchCmds(kind, n, m, args, workdir):
    binary = args.dlaunch if kind == "dlaunch" else args.baseline
    extra = args.baseline_flags.split() if kind == "baseline" else []
    return [[binary, "run", "--nnodes", str(n), "--nproc-per-node", str(m), "--heartbeat", str(args.heartbeat),
             "--job-root", os.path.join(workdir, "runs")] + extra + ["--", WORKER]]


def ElasticCmds(prefix, n, m, rdzv_id, extra=()):
    """One torchrun-style launcher per node, all meeting at one c10d endpoint on 127.0.0.1."""
    port = FreePort()
    return [prefix + ["--rdzv_backend=c10d", f"--rdzv_endpoint=127.0.0.1:{port}", f"--rdzv_id={rdzv_id}",
                      f"--nnodes={n}", f"--nproc_per_node={m}", *extra, "--no_python", WORKER]
            for _ in range(n)]


def DeepspeedCmds(n, m, args, workdir, tag):
    """One `deepspeed --no_ssh` per node; the hostfile only names N hosts of M slots."""
    hostfile = os.path.join(workdir, tag + ".hostfile")
    with open(hostfile, "w") as f:
        f.writelines(f"node{i} slots={m}\n" for i in range(n))
    port = FreePort()
    return [[VenvBin(args, "deepspeed"), "--hostfile", hostfile, "--no_ssh", f"--node_rank={i}",
             "--master_addr=127.0.0.1", f"--master_port={port}", "--no_python", "--no_local_rank", WORKER]
            for i in range(n)]


def TorchxCmds(n, m, args, workdir, tag):
    log_dir = os.path.join(workdir, tag + ".torchx")
    return [[VenvBin(args, "torchx"), "run", "-s", "local_cwd", "-cfg", f"log_dir={log_dir}", TORCHX_COMPONENT,
             "-j", ConfigName(n, m), "--rdzv_port", str(FreePort()), "--script", WORKER]]


def Commands(kind, n, m, args, workdir, tag):
    if kind in DLAUNCH_KINDS:
        return DlaunchCmds(kind, n, m, args, workdir)
    if kind == "torchrun1":  # --redirects/--tee=9:0 work around a 1.13 start-up failure on Python 3.11
        return ElasticCmds([TORCH1_PYTHON, "-m", "torch.distributed.run"], n, m, tag,
                           ["--redirects=9:0", "--tee=9:0"])
    if kind == "torchrun2":
        return ElasticCmds([VenvBin(args, "python"), "-m", "torch.distributed.run"], n, m, tag)
    if kind == "ft_launcher":
        return ElasticCmds([VenvBin(args, "ft_launcher")], n, m, tag)
    if kind == "deepspeed":
        return DeepspeedCmds(n, m, args, workdir, tag)
    if kind == "torchx":
        return TorchxCmds(n, m, args, workdir, tag)
    raise ValueError(f"unknown launcher kind {kind}")


def KindEnv(kind, args):
    """TorchX's component runs `torchrun` from PATH: the venv's."""
    if kind == "torchx":
        return {"PATH": os.path.join(args.venv, "bin") + os.pathsep + os.environ.get("PATH", "")}
    return {}


# ---------------------------------------------------------------------------------------------
# One run.

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


def WaitAll(procs, timeout_s):
    """Polls until every process exits or the limit passes; returns (exit codes, exit times, CPU s).
    The CPU is user + system time of each launcher process and of every descendant it waited for
    (the agents, their helpers and the workers): the whole job's, when every process exited."""
    deadline = time.monotonic() + timeout_s
    codes, exited, cpu = [None] * len(procs), [None] * len(procs), [None] * len(procs)
    while any(c is None for c in codes) and time.monotonic() < deadline:
        for i, p in enumerate(procs):
            if codes[i] is not None:
                continue
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, so Popen must not wait
                codes[i], exited[i] = p.returncode, time.time()
                cpu[i] = usage.ru_utime + usage.ru_stime
        time.sleep(0.005)
    return codes, exited, cpu


def RunEnv(kind, args, stamps, sleep_s):
    env = dict(os.environ, DLAUNCH_BENCH_STAMPS=stamps, **KindEnv(kind, args))
    env.pop("DLAUNCH_BENCH_SLEEP", None)
    if sleep_s is not None:
        env["DLAUNCH_BENCH_SLEEP"] = str(sleep_s)
    return env


def Launch(kind, cmds, env, workdir, log, smaps_when, timeout_s):
    """Starts the launcher processes, samples them until they exit; returns (t0, codes, exit times,
    CPU, sampler)."""
    t0 = time.time()
    procs = [subprocess.Popen(c, env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, start_new_session=True) for c in cmds]
    roots = [p.pid for p in procs]
    single_launcher = kind in DLAUNCH_KINDS or kind == "torchx"
    sampler = Sampler(kind, roots, launcher_pid=roots[0] if single_launcher else None, smaps_when=smaps_when)
    sampler.start()
    codes, exited, cpu = WaitAll(procs, timeout_s)
    sampler.stop.set()
    sampler.join()
    KillGroups(procs)
    return t0, codes, exited, cpu, sampler


def RunOnce(kind, n, m, args, workdir, sleep_s=None):
    """Runs one job of N nodes x M workers with one launcher kind; returns a result dict."""
    tag = f"{kind}-{ConfigName(n, m)}-{time.monotonic_ns()}"
    stamps = os.path.join(workdir, tag + ".stamps")
    cmds = Commands(kind, n, m, args, workdir, tag)
    # With a sleeping worker, look inside an agent once every worker runs (a Python agent is
    # still importing torch long before that).
    smaps_when = (lambda: len(Stamps(stamps)) >= n * m) if sleep_s else None
    with open(os.path.join(workdir, tag + ".log"), "w") as log:
        t0, codes, exited, cpu, sampler = Launch(kind, cmds, RunEnv(kind, args, stamps, sleep_s), workdir, log,
                                                 smaps_when, args.timeout)
    starts = Stamps(stamps)
    timed_out = any(c is None for c in codes)
    res = {"kind": kind, "config": ConfigName(n, m), "n": n, "m": m,
           "ok": not timed_out and all(c == 0 for c in codes) and len(starts) == n * m,
           "codes": codes, "timed_out": timed_out, "workers_stamped": len(starts),
           "start_s": (max(starts) - t0) if starts else None,
           "first_start_s": (min(starts) - t0) if starts else None,
           "wall_s": (max(e for e in exited if e) - t0) if any(exited) else None,
           "cpu_s": sum(cpu) if all(c is not None for c in cpu) else None,
           "agent_peak_kb": sampler.AgentPeak(), "node_kb": sampler.node,
           "launcher_peak_kb": sampler.launcher if sampler.launcher_pid else None,
           "smaps_kb": sampler.smaps, "rollup_kb": sampler.rollup, "log": log.name,
           "cmd": [a.replace(workdir, "<tmp>") for a in cmds[0]], "launcher_processes": len(cmds)}
    if kind in DLAUNCH_KINDS:
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


# ---------------------------------------------------------------------------------------------
# Machine, versions, and the checks before a run.

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


def PackageVersions(python, names):
    """'name version' of each package in python's environment (and Python's own), or None."""
    code = ("import importlib.metadata as m, platform, sys\n"
            "print('python', platform.python_version())\n"
            "for n in sys.argv[1:]:\n"
            "    try: print(n, m.version(n))\n"
            "    except m.PackageNotFoundError: print(n, 'missing')\n")
    try:
        out = subprocess.run([python, "-c", code, *names], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.split("\n")[:-1] if out.returncode == 0 else None


def Versions(args, kinds):
    """Lines naming every version the run uses."""
    lines = []
    dl = subprocess.run([args.dlaunch, "--version"], capture_output=True, text=True).stdout.strip()
    rev = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    lines.append(f"{dl or 'dlaunch ?'} (checkout {rev.stdout.strip() or '?'})")
    if any(k in kinds for k in ("torchrun2", "ft_launcher", "deepspeed", "torchx")):
        venv = PackageVersions(VenvBin(args, "python"), VENV_PACKAGES)
        lines.append(f"venv {os.path.relpath(args.venv, REPO)}: " + ", ".join(venv or ["not usable"]))
    if "torchrun1" in kinds:
        sys_torch = PackageVersions(TORCH1_PYTHON, ("torch",))
        lines.append(f"torchrun1 {TORCH1_PYTHON}: " + ", ".join(sys_torch or ["not usable"]))
    return lines


def Preflight(kinds, args):
    """Exits with a message when a requested launcher cannot be started at all."""
    checks = {"torchrun1": [TORCH1_PYTHON, "-c", "import torch.distributed.run"],
              "torchrun2": [VenvBin(args, "python"), "-c", "import torch.distributed.run"],
              "ft_launcher": [VenvBin(args, "python"), "-c", "import nvidia_resiliency_ext.fault_tolerance"],
              "deepspeed": [VenvBin(args, "python"), "-c", "import deepspeed.launcher.runner"],
              "torchx": [VenvBin(args, "python"), "-c", "import torchx.runner"]}
    for kind in kinds:
        if kind in checks and subprocess.run(checks[kind], capture_output=True).returncode != 0:
            sys.exit(f"launcher_bench: {kind} cannot be started ({' '.join(checks[kind])} fails); make the venv"
                     " with bench/compare/venv.sh, pass --venv DIR, or leave the kind out of --kinds")


# ---------------------------------------------------------------------------------------------

def ParseArgs():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default="1x1,2x1,4x1,8x1,16x1,4x2",
                    help="comma-separated NxM: N nodes of M workers (a bare N means Nx1)")
    ap.add_argument("--nodes", help="comma-separated node counts of one worker each (instead of --configs)")
    ap.add_argument("--kinds", default="dlaunch,torchrun2,ft_launcher,deepspeed,torchx",
                    help="launcher kinds, from dlaunch," + ",".join(OTHER_KINDS))
    ap.add_argument("--no-torchrun", action="store_true", help="measure dlaunch only (--kinds dlaunch)")
    ap.add_argument("--reps", type=int, default=5, help="dlaunch repetitions per configuration")
    ap.add_argument("--other-reps", "--torchrun-reps", type=int, default=3,
                    help="repetitions per configuration of every other launcher")
    ap.add_argument("--other-reps-large", "--torchrun-reps-large", type=int, default=1,
                    help="repetitions of the other launchers for node counts >= --large (they are slow there)")
    ap.add_argument("--large", type=int, default=16, help="node count from which --other-reps-large applies")
    ap.add_argument("--rss-sleep", type=float, default=3.0,
                    help="seconds the worker sleeps in the one memory run per kind and configuration (0: none)")
    ap.add_argument("--venv", default=DEFAULT_VENV,
                    help="the venv of torchrun2, ft_launcher, deepspeed and torchx (bench/compare/venv.sh)")
    ap.add_argument("--dlaunch", help="dlaunch binary (default: $DLAUNCH_BIN, else build/bin/dlaunch)")
    ap.add_argument("--baseline", help="a second dlaunch binary to compare with, run interleaved")
    ap.add_argument("--baseline-flags", default="",
                    help="extra `dlaunch run` flags of the baseline runs, e.g. --no-tls with the same binary")
    ap.add_argument("--heartbeat", type=float, default=0.5, help="dlaunch --heartbeat")
    ap.add_argument("--timeout", type=float, default=300, help="per-run limit in seconds")
    ap.add_argument("--json", help="write every run's raw result to this file, after each run")
    ap.add_argument("--report", nargs="+", metavar="JSON",
                    help="print the tables of --json files of earlier runs (one run done in parts), and run nothing")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory (logs, stamps)")
    return ap.parse_args()


def Plan(configs, kinds, args):
    """(kind, n, m, sleep_s) in run order: per configuration the kinds interleaved, then memory runs."""
    def Reps(kind, n):
        if kind in DLAUNCH_KINDS:
            return args.reps
        return args.other_reps_large if n >= args.large else args.other_reps

    plan = []
    for n, m in configs:
        for i in range(max(Reps(k, n) for k in kinds)):
            plan += [(k, n, m, None) for k in kinds if i < Reps(k, n)]
        if args.rss_sleep > 0:
            plan += [(k, n, m, args.rss_sleep) for k in kinds]
    return plan


def Measure(args, configs, kinds):
    report = {"machine_before": MachineLine(), "versions": Versions(args, kinds), "dlaunch": args.dlaunch,
              "configs": [ConfigName(n, m) for n, m in configs], "kinds": [k for k in kinds if k != "baseline"],
              "baseline": f"{args.baseline} {args.baseline_flags}".rstrip() if args.baseline else None,
              "results": []}
    print(f"# machine: {report['machine_before']}", file=sys.stderr)
    for line in report["versions"]:
        print(f"# {line}", file=sys.stderr)
    workdir = tempfile.mkdtemp(prefix="dlaunch-launcher-bench-")
    for kind, n, m, sleep_s in Plan(configs, kinds, args):
        r = dict(RunOnce(kind, n, m, args, workdir, sleep_s), rss_run=sleep_s is not None)
        report["results"].append(r)
        agent = r["agent_peak_kb"] or {}
        print(f"# {kind:11s} {r['config']:5s} {'ok  ' if r['ok'] else 'FAIL'} start {Fmt(r['start_s'])} s"
              f"  wall {Fmt(r['wall_s'])} s  agent HWM {agent.get('hwm', 0) / 1024:.1f} MB"
              f"{'' if r['ok'] else '  log: ' + r['log']}", file=sys.stderr, flush=True)
        report["machine_after"] = MachineLine()
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
    if args.keep:
        print(f"\nscratch: {workdir}", file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return report


def main():
    args = ParseArgs()
    if args.report:
        reports = []
        for path in args.report:
            with open(path) as f:
                reports.append(json.load(f))
        PrintReport(MergeReports(reports))
        return 0
    args.dlaunch = os.path.abspath(FindDlaunch(args.dlaunch))
    args.venv = os.path.abspath(os.path.join(REPO, args.venv))
    configs = ParseConfigs(args.nodes or args.configs)
    kinds = ["dlaunch"] if args.no_torchrun else [k for k in args.kinds.split(",") if k]
    unknown = [k for k in kinds if k not in ("dlaunch",) + OTHER_KINDS]
    if unknown or "dlaunch" not in kinds:
        sys.exit(f"launcher_bench: --kinds must name dlaunch and only known kinds; unknown: {unknown}")
    if args.baseline:
        args.baseline = os.path.abspath(args.baseline)
        kinds.insert(1, "baseline")
    Preflight(kinds, args)
    report = Measure(args, configs, kinds)
    PrintReport(report)
    return 0 if all(r["ok"] for r in report["results"]) else 1


if __name__ == "__main__":
    sys.exit(main())
