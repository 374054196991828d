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
NODE_SCENARIOS = ("node-frozen", "agent-sigkill")
# The launchers: dlaunch; torchrun of Debian's PyTorch 1.13 (/usr/bin/python3); torchrun of the
# pinned venv's PyTorch 2.x; the venv's ft_launcher (nvidia-resiliency-ext) with its rank
# heartbeats on in the worker, its limits near dlaunch's (heartbeat 1 s x 3, stall 3 s).
KINDS = ("dlaunch", "torchrun", "torchrun2", "ft_launcher")
FT_LAUNCHER_ARGS = ["--ft-workload-check-interval=1", "--ft-initial-rank-heartbeat-timeout=60",
                    "--ft-rank-heartbeat-timeout=3", "--ft-rank-termination-signal=SIGTERM",
                    "--ft-enable-nic-monitor=false"]
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
        # A healthy torchrun node restarts its workers with TORCHELASTIC_RESTART_COUNT unchanged.
        extra = ["--round-from-stamps"] if self.kind != "dlaunch" else []
        if self.kind == "ft_launcher":
            extra.append("--ft-heartbeats")
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
        # torchrun 2.x hands its rendezvous store's port to the workers as MASTER_PORT, where
        # fault_worker.py's rank 0 listens itself: a port of their own, as under 1.13.
        env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"
        popen = dict(stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        if self.kind == "dlaunch":
            self.procs.append(subprocess.Popen(self.DlaunchCommand(master_port), **popen))
            return
        port = FreePort()
        for _ in range(NODES):
            self.procs.append(subprocess.Popen(self.TorchrunCommand(port), **popen))

    def DlaunchCommand(self, master_port):
        # A lost node drops out (nodes.min 2) so that a restart can go on without it.
        nodes = f'"2:{NODES}"' if self.scenario in NODE_SCENARIOS else NODES
        python = self.args.venv_python if self.args.venv_worker else PYTHON
        yaml = (f"name: bench-{self.scenario}\nnodes: {nodes}\nnproc_per_node: {NPROC}\n"
                f"command: {json.dumps([python, WORKER] + self.WorkerArgs())}\n"
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
        return [self.dlaunch, "run", os.path.join(self.dir, "job.yaml"), "--job-dir", self.job_dir]

    def TorchrunCommand(self, port):
        """One node's agent: torchrun 1.13 or 2.x, or ft_launcher (torchrun's options and its own)."""
        launcher = {"torchrun": [PYTHON, "-m", "torch.distributed.run"],
                    "torchrun2": [self.args.venv_python, "-m", "torch.distributed.run"],
                    "ft_launcher": [self.args.venv_ft_launcher] + FT_LAUNCHER_ARGS}[self.kind]
        # As dlaunch's nodes "2:3": a lost node drops out; the last call waits for a late agent.
        nnodes = [f"--nnodes=2:{NODES}", "--rdzv_conf=last_call_timeout=3"] \
            if self.scenario in NODE_SCENARIOS else [f"--nnodes={NODES}"]
        return launcher + nnodes + [
            "--rdzv_backend=c10d", f"--rdzv_endpoint=127.0.0.1:{port}",
            f"--rdzv_id={os.path.basename(self.dir)}", f"--nproc_per_node={NPROC}",
            f"--max_restarts={self.args.max_restarts}", "--redirects=9:0", "--tee=9:0",
            WORKER] + self.WorkerArgs()

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
            # The worker's own fault: Wait's cap counts from it, not from a slow start-up.
            what = SELF_FAULT_STAMP.get(self.scenario)
            WaitFor(lambda: any(s[0] == what and s[2] == 0 for s in ReadStamps(self.stamps)), 90,
                    period=0.05)
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
        # From the fault (Inject returns at it): its detection (cap), the stop and a 1 s round 1.
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
        # Every launcher goes on without a lost node (nodes 2:3): round 1 has one node fewer.
        world_after = NODES * NPROC - (NPROC if node_fault else 0)
        if len({s[1] for s in starts}) == world_after:
            result["restart_s"] = max(s[3] for s in starts) - fault
        if self.kind == "dlaunch":
            self.MeasureDlaunch(fault, expected, result)
        else:
            self.MeasureTorchrun(fault, expected, result, bool(told))
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

    def MeasureTorchrun(self, fault, expected, result, stopped):
        result["detected"] = stopped or result.get("restart_s") is not None
        with open(os.path.join(self.dir, "launcher.out"), errors="replace") as f:
            out = f.read()
        logged = [t for t in LogTimes(out, fault) if t >= fault - 0.001]
        if logged:
            result["detect_s"] = min(logged) - fault
        if not expected:
            return
        m = re.search(r"Root Cause \(first observed failure\):.*?rank\s*:\s*(\d+)", out, re.S)
        # ft_launcher's rank monitor names the rank whose heartbeats stopped.
        hung = re.search(r"RankMonServer\d+@[^:]*:(\d+)\] Did not get", out)
        named = m or hung
        if named:
            result["cause_ok"] = expected[1] is not None and int(named.group(1)) == expected[1]


# The first trace of a failure in torchrun's and ft_launcher's logs: a failed worker, a missed
# rank heartbeat, a stop of the workers.
FAILURE_LOG = re.compile(r"failed \(exitcode|Did not get (initial|subsequent) heartbeat|"
                         r"closing signal SIGTERM|FT timeout elapsed")
# ft_launcher: [2026-11-27 01:02:41,371]; torch.distributed.elastic: E1127 01:03:40.639000
LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\]|"
                      r"^[EWI](\d{4} \d\d:\d\d:\d\d)\.(\d{6})")


def LogTimes(out, near):
    """Unix times (local time, millisecond resolution) of the log lines in FAILURE_LOG."""
    year = time.localtime(near).tm_year
    times = []
    for line in out.splitlines():
        m = LOG_TIME.match(line)
        if not m or not FAILURE_LOG.search(line):
            continue
        if m.group(1):
            t = time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) + int(m.group(2)) / 1e3
        else:
            t = time.mktime(time.strptime(f"{year}{m.group(3)}", "%Y%m%d %H:%M:%S"))
            t += int(m.group(4)) / 1e6
        times.append(t)
    return times


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
