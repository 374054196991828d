#!/usr/bin/python3
"""Fault benchmark: how fast dlaunch (and torchrun, side by side) notices a fault, stops the
other ranks, restarts, and whether it names the right rank and leaves nothing behind.

Every scenario runs a job of 3 local nodes x 2 ranks of tests/cluster/fault_worker.py on this
machine (dlaunch: `dlaunch run` with 3 local agents; torchrun: 3 torchrun processes with c10d
rendezvous, as a multi-node job starts them) and injects one fault into round 0. The worker
appends timestamped lines (start, barrier, sigterm, the fault, done) to a stamp file under both
launchers, and the injector notes the time of the faults it makes, so the numbers are:

  detect   fault -> the launcher's first failure_detected event (events.jsonl; dlaunch only:
           torchrun writes no timed record of its decision)
  stop     fault -> the first SIGTERM another rank receives, and the last: every rank that
           should stop was told (both launchers; a faulty node's own ranks do not count)
  restart  fault -> every rank of round 1 started (both; with --max-restarts >= 1), and the
           same from the detection (torchrun: from its first SIGTERM, the earliest sign of its
           decision); a torchrun node that did not fail restarts its workers with
           TORCHELASTIC_RESTART_COUNT unchanged, so under torchrun the worker counts its
           rounds itself (--round-from-stamps)
  cause    the root cause named is the injected one (dlaunch: the first root_cause event,
           class and rank or node; torchrun: the "Root Cause" rank of its error report, printed
           only when it gives up)
  orphans  processes of the job alive 5 s after the launcher ended (must be 0); a launcher
           still running at the cap counts as "not ended" instead

A fault a launcher does not notice within --cap seconds counts as "not detected"; everything of
that run is then killed. Run with /usr/bin/python3 (Debian's python3-torch).

  fault_bench.py [--reps 20] [--torchrun-reps 20] [--max-restarts 0|1] [--scenarios a,b]
                 [--no-torchrun] [--cap 20] [--dlaunch build/bin/dlaunch]
"""
import argparse
import calendar
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = os.path.join(ROOT, "tests", "cluster", "fault_worker.py")
PYTHON = "/usr/bin/python3"
NODES, NPROC = 3, 2

# name: (worker args, injector, expected cause (class, rank or None, node), runs under torchrun)
SCENARIOS = {
    "worker-sigkill": (["--fault", "kill", "--fault-rank", "3"], None, ("worker crash", 3, 1), True),
    "worker-sigsegv": (["--fault", "segv", "--fault-rank", "3"], None, ("worker crash", 3, 1), True),
    "stall": (["--fault", "stop", "--fault-rank", "3"], None, ("stall", 3, 1), True),
    "node-frozen": ([], "freeze-node", ("node silent", None, 1), True),
    "agent-sigkill": ([], "kill-agent", ("agent lost", None, 1), True),
    "exit-hang": (["--round0-steps", "15", "--fault", "hang-exit", "--fault-rank", "3"], None,
                  ("hang at exit", 3, 1), True),
    "port-taken": ([], "take-port", ("worker crash", 0, 0), False),
    "launcher-sigkill": ([], "kill-launcher", None, True),
}
# torchrun has no watch for these (no progress check, no exit timeout, no peer heartbeat
# while the round runs): they wait out --cap, so they get fewer repetitions.
TORCHRUN_UNDETECTED = {"stall", "exit-hang", "node-frozen", "agent-sigkill"}
# The stamp that times a fault the worker makes itself.
SELF_FAULT_STAMP = {"worker-sigkill": "kill", "worker-sigsegv": "segv", "stall": "stop",
                    "exit-hang": "done", "port-taken": "bind-failed"}


def FreePort():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ReadStamps(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 4:
                    out.append((parts[0], int(parts[1]), int(parts[2]), float(parts[3])))
    except FileNotFoundError:
        pass
    return out


def ProcsWithEnv(entry):
    """PIDs whose environment holds `entry` (NAME=value)."""
    found = []
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if entry.encode() in f.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            pass
    return found


def EnvOf(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
    except OSError:
        return {}


def Children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def Cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def WaitFor(pred, timeout, period=0.02):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(period)
    return None


class Run:
    """One job under one launcher: start, inject, wait, measure, clean up."""

    def __init__(self, kind, scenario, args, dlaunch, workdir):
        self.kind, self.scenario, self.args, self.dlaunch = kind, scenario, args, dlaunch
        self.dir = tempfile.mkdtemp(prefix=f"{kind}-{scenario}-", dir=workdir)
        self.stamps = os.path.join(self.dir, "stamps")
        self.tag = f"BENCH_FAULT_TAG={os.path.basename(self.dir)}"
        self.procs = []
        self.blocker = None
        self.fault_time = None

    def WorkerArgs(self):
        worker_args, _, _, _ = SCENARIOS[self.scenario]
        extra = ["--round-from-stamps"] if self.kind == "torchrun" else []
        return worker_args + ["--steps", "10", "--stamp-file", self.stamps] + extra

    def Start(self):
        env = dict(os.environ)
        env["BENCH_FAULT_TAG"] = self.tag.split("=", 1)[1]
        out = open(os.path.join(self.dir, "launcher.out"), "w")
        master_port = 0
        if self.scenario == "port-taken":
            master_port = FreePort()
            self.blocker = socket.socket()
            self.blocker.bind(("0.0.0.0", master_port))
            self.blocker.listen()
        if self.kind == "dlaunch":
            # A lost node drops out (nodes.min 2) so that a restart can go on without it.
            nodes = f'"2:{NODES}"' if self.scenario in ("node-frozen", "agent-sigkill") else NODES
            yaml = (f"name: bench-{self.scenario}\nnodes: {nodes}\nnproc_per_node: {NPROC}\n"
                    f"command: {json.dumps([PYTHON, WORKER] + self.WorkerArgs())}\n"
                    f"max_restarts: {self.args.max_restarts}\n"
                    "heartbeat:\n  interval: 1s\n  misses: 3\n"
                    "stop:\n  grace: 2s\n  exit_timeout: 2s\n"
                    # Only where a stall is the fault: a frozen node also stops its ranks'
                    # progress, and a stall limit equal to the heartbeat limit would race it.
                    + ("health:\n  stall_timeout: 3s\n" if self.scenario == "stall" else "") +
                    f"rendezvous:\n  join_timeout: 60s\n  master_port: {master_port}\n"
                    "cpus:\n  binding: none\n")
            with open(os.path.join(self.dir, "job.yaml"), "w") as f:
                f.write(yaml)
            self.job_dir = os.path.join(self.dir, "job")
            self.procs.append(subprocess.Popen(
                [self.dlaunch, "run", os.path.join(self.dir, "job.yaml"), "--job-dir", self.job_dir],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        else:
            port = FreePort()
            for _ in range(NODES):
                self.procs.append(subprocess.Popen(
                    [PYTHON, "-m", "torch.distributed.run", "--rdzv_backend=c10d",
                     f"--rdzv_endpoint=127.0.0.1:{port}", f"--rdzv_id={os.path.basename(self.dir)}",
                     f"--nnodes={NODES}", f"--nproc_per_node={NPROC}",
                     f"--max_restarts={self.args.max_restarts}", "--redirects=9:0", "--tee=9:0",
                     WORKER] + self.WorkerArgs(),
                    stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))

    def RankPid(self, rank):
        for pid in ProcsWithEnv(self.tag):
            env = EnvOf(pid)
            if env.get(b"RANK") == str(rank).encode() and "fault_worker" in Cmdline(pid):
                return pid
        return None

    def NodeOneAgent(self):
        """The process that started rank 2 (node 1's agent: dlaunch-agent or torchrun)."""
        pid = self.RankPid(2)
        if pid is None:
            return None
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])

    def Inject(self):
        _, injector, _, _ = SCENARIOS[self.scenario]
        if injector in (None, "take-port"):
            return True
        # External faults wait until every rank of round 0 is past its barrier.
        ready = WaitFor(lambda: len({s[1] for s in ReadStamps(self.stamps)
                                     if s[0] == "barrier" and s[2] == 0}) == NODES * NPROC, 60)
        if not ready:
            return False
        time.sleep(0.5)
        if injector == "kill-launcher":
            self.fault_time = time.time()
            for p in self.procs:
                os.kill(p.pid, signal.SIGKILL)
            # What the launcher started must go by itself: time until the last process is gone.
            if WaitFor(lambda: not ProcsWithEnv(self.tag), 10, period=0.01):
                self.gone_s = time.time() - self.fault_time
            return True
        agent = self.NodeOneAgent()
        if agent is None:
            return False
        if injector == "kill-agent":
            self.fault_time = time.time()
            os.kill(agent, signal.SIGKILL)
        elif injector == "freeze-node":
            self.frozen = [agent] + Children(agent)
            self.fault_time = time.time()
            for pid in self.frozen:
                os.kill(pid, signal.SIGSTOP)
        return True

    def Wait(self):
        # Time for the fault (step 5, ~0.5 s), its detection (cap), the stop and a 1 s round 1.
        deadline = time.time() + self.args.cap + 10
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                pass
        self.ended = time.time()
        return all(p.poll() is not None for p in self.procs)

    def Cleanup(self):
        for pid in getattr(self, "frozen", []):
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        if self.blocker:
            self.blocker.close()
        for pid in ProcsWithEnv(self.tag):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def Measure(self, finished):
        stamps = ReadStamps(self.stamps)
        fault = self.fault_time
        if fault is None and self.scenario in SELF_FAULT_STAMP:
            what = SELF_FAULT_STAMP[self.scenario]
            times = [s[3] for s in stamps if s[0] == what and s[2] == 0]
            fault = min(times) if times else None
        result = {"kind": self.kind, "scenario": self.scenario, "detected": False}
        if fault is None:
            result["error"] = "fault not seen"
            return result
        expected = SCENARIOS[self.scenario][2]
        # The ranks that should be told to stop: all but the faulty rank, or but the faulty
        # node's ranks when the whole node is the fault (they are frozen or gone).
        node_fault = expected is not None and expected[1] is None
        peers = [r for r in range(NODES * NPROC)
                 if not (expected and (r == expected[1] or (node_fault and r // NPROC == expected[2])))]
        if self.scenario == "exit-hang":
            peers = [expected[1]]  # the others exited 0; the hung rank is the one to stop
        told = {}
        for event, rank, round_, t in stamps:
            if event == "sigterm" and round_ == 0 and rank in peers:
                told.setdefault(rank, t)
        if told:
            result["stop_s"] = min(told.values()) - fault
        if len(told) == len(peers):
            result["all_stop_s"] = max(told.values()) - fault
        starts = [s for s in stamps if s[0] == "start" and s[2] == 1]
        # dlaunch goes on without a lost node (nodes.min 2): round 1 has one node fewer.
        world_after = NODES * NPROC - (NPROC if self.kind == "dlaunch" and node_fault else 0)
        if len({s[1] for s in starts}) == world_after:
            result["restart_s"] = max(s[3] for s in starts) - fault
        if self.kind == "dlaunch":
            self.MeasureDlaunch(fault, expected, result)
        else:
            self.MeasureTorchrun(expected, result, bool(told))
        # Restart time as the issue counts it: from the decision to every new worker running.
        # torchrun records no decision; its first SIGTERM is the earliest sign of one.
        decided = result.get("detect_s", result.get("stop_s"))
        if "restart_s" in result and decided is not None:
            result["restart_after_detect_s"] = result["restart_s"] - decided
        if self.scenario == "launcher-sigkill":
            result["detected"] = hasattr(self, "gone_s")
            if result["detected"]:
                result["stop_s"] = self.gone_s
        # Orphans: anything of the job alive 5 s after the launcher ended (or was killed). A
        # launcher still running at the cap has no orphans yet: the job itself never ended.
        result["ended"] = finished
        if finished:
            # Once none is left, none can come back: no need to wait the 5 s out.
            WaitFor(lambda: not ProcsWithEnv(self.tag), max(0.0, self.ended + 5 - time.time()),
                    period=0.1)
            result["orphans"] = len(ProcsWithEnv(self.tag))
        result["exit_codes"] = [p.poll() for p in self.procs]
        return result

    def MeasureDlaunch(self, fault, expected, result):
        try:
            with open(os.path.join(self.job_dir, "events.jsonl")) as f:
                events = [json.loads(line) for line in f if line.strip()]
        except (OSError, ValueError):
            events = []
        detected = [e for e in events if "failure_detected" in e]
        if detected:
            stamp = detected[0]["time"]  # 2026-11-23T19:05:01.123Z
            t = calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))
            t += float("0." + stamp[20:23])
            result["detect_s"] = t - fault
            result["detected"] = result["detect_s"] <= self.args.cap
        causes = [e["root_cause"] for e in events if "root_cause" in e]
        if expected and causes:
            f = causes[0]["failure"]
            cls, rank, node = expected
            result["cause_ok"] = (f.get("failure_class") == cls and f.get("node_rank") == node and
                                  (rank is None or f.get("rank") == rank))
            result["cause"] = f.get("description", "")

    def MeasureTorchrun(self, expected, result, stopped):
        result["detected"] = stopped or result.get("restart_s") is not None
        if not expected:
            return
        with open(os.path.join(self.dir, "launcher.out"), errors="replace") as f:
            out = f.read()
        m = re.search(r"Root Cause \(first observed failure\):.*?rank\s*:\s*(\d+)", out, re.S)
        if m:
            result["cause_ok"] = expected[1] is not None and int(m.group(1)) == expected[1]


def RunOnce(kind, scenario, args, workdir):
    run = Run(kind, scenario, args, args.dlaunch, workdir)
    run.Start()
    try:
        injected = run.Inject()
        finished = run.Wait() if injected else False
        result = run.Measure(finished) if injected else {"kind": kind, "scenario": scenario,
                                                         "error": "could not inject"}
    finally:
        run.Cleanup()
    return result


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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--torchrun-reps", type=int, default=None, help="default: --reps")
    ap.add_argument("--torchrun-reps-undetected", type=int, default=3,
                    help="torchrun repetitions of the faults it does not notice (each waits --cap)")
    ap.add_argument("--max-restarts", type=int, default=0)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--no-torchrun", action="store_true")
    ap.add_argument("--cap", type=float, default=20, help="seconds after which a fault counts as not detected")
    ap.add_argument("--dlaunch", default=os.path.join(ROOT, "build", "bin", "dlaunch"))
    ap.add_argument("--json", default="", help="also write every run's measurements here")
    args = ap.parse_args()
    torchrun_reps = args.reps if args.torchrun_reps is None else args.torchrun_reps
    scenarios = [s for s in args.scenarios.split(",") if s]
    for s in scenarios:
        if s not in SCENARIOS:
            sys.exit(f"fault_bench: unknown scenario {s!r}; known: {', '.join(SCENARIOS)}")
    if not os.access(args.dlaunch, os.X_OK):
        sys.exit(f"fault_bench: {args.dlaunch} is not built (scripts/build.sh dlaunch dlaunch-agent)")
    torchrun = not args.no_torchrun
    if torchrun and subprocess.run([PYTHON, "-c", "import torch.distributed.run"],
                                   capture_output=True).returncode != 0:
        sys.exit(f"fault_bench: {PYTHON} cannot import torch.distributed.run; pass --no-torchrun")
    workdir = tempfile.mkdtemp(prefix="fault-bench-")
    results = []
    for scenario in scenarios:
        for i in range(max(args.reps, torchrun_reps if torchrun else 0)):
            kinds = []
            if i < args.reps:
                kinds.append("dlaunch")
            t_reps = (args.torchrun_reps_undetected if scenario in TORCHRUN_UNDETECTED
                      else torchrun_reps)
            if torchrun and i < t_reps and SCENARIOS[scenario][3]:
                kinds.append("torchrun")
            for kind in kinds:
                r = RunOnce(kind, scenario, args, workdir)
                results.append(r)
                print(json.dumps(r), file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print(f"machine: {MachineLine()}")
    print(f"max_restarts {args.max_restarts}; {NODES} local nodes x {NPROC} ranks of fault_worker.py; "
          f"times in seconds from the fault, p50 / p99; cap {args.cap:g} s\n")
    print("| scenario | launcher | runs | noticed | detect (events.jsonl) | first peer SIGTERM | "
          "every peer SIGTERM | restart: fault -> round 1 running | restart: detection -> round 1 "
          "running | root cause right | orphans | launcher ended |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for scenario in scenarios:
        for kind in ("dlaunch", "torchrun"):
            line = Summarize(results, kind, scenario, args.cap)
            if line:
                print(line)


if __name__ == "__main__":
    main()
