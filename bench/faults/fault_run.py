"""One run of fault_bench.py: the scenarios and launchers, each launcher's command line (dlaunch's
job file, torchrun's and ft_launcher's options), the fault's injection, the wait for the launcher
and the clean-up after it (Run), with the /proc look-ups they need. What a run measured is
fault_measure.py's. Python standard library only.
"""
import json
import os
import signal
import socket
import subprocess
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
    """One job under one launcher: start, inject, wait, clean up (fault_measure.Measure measures it)."""

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
        cmd = [self.dlaunch, "run", os.path.join(self.dir, "job.yaml"), "--job-dir", self.job_dir]
        # The nodes' preflight finds the taken port before any worker starts (the job ends as a
        # launch error, no worker to time): off here, so that a worker's failing bind is timed
        # as under the other launchers.
        return cmd + (["--no-preflight"] if self.scenario == "port-taken" else [])

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
