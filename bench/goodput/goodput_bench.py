#!/usr/bin/python3
"""Goodput bench: a real PyTorch 2.x DDP job (ddp_job.py: torch, gloo, checkpoints, the dlaunch
package's reports) on 2 local nodes x 2 ranks, with faults injected at a fixed rate, under
dlaunch and under torchrun 2.x and ft_launcher with their restarts. Prints, per launcher, the
goodput and where the lost seconds went, and what a restart cost phase by phase (import, process
group, model and checkpoint load, first step), all from the job's own time stamps, counted alike
under every launcher (goodput_tables.py); for dlaunch also its own account (summary.json).

Faults (--faults, in this order, one every --fault-every seconds from round 0's first step; a
fault waits until the job steps again after the previous one):

  crash   SIGKILL of rank 1 (on rank 0's node)
  stall   SIGSTOP of rank 2 (the other node): it stops answering, its peers wait in their
          all-reduce
  node    SIGKILL of rank 2's node: its agent (dlaunch-agent, torchrun or ft_launcher) and
          every process under it; the job may go on with 1 node (nodes 1:2 everywhere)

Launchers (--kinds): dlaunch (`dlaunch run`, local agents, stall limit --stall-timeout);
torchrun2 and ft_launcher of the venv (bench/compare/venv.sh), one per node, c10d rendezvous on
127.0.0.1, --max_restarts; ft_launcher with the job's rank heartbeats and its hang limit
--stall-timeout. torchrun has no watch for a stalled rank: its peers fail when gloo's
collective timeout (--pg-timeout, the same for every launcher) ends their wait.

  goodput_bench.py [--kinds dlaunch,torchrun2,ft_launcher] [--reps 2] [--steps 1500]
                   [--fault-every 30] [--faults crash,stall,node] [--json FILE]
                   [--table-from FILE...]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "faults"))
sys.path.insert(0, HERE)
from fault_run import Children, Cmdline, EnvOf, FreePort, ProcsWithEnv, WaitFor  # noqa: E402
from goodput_tables import Analyse, PrintTables  # noqa: E402

JOB = os.path.join(HERE, "ddp_job.py")
NODES, NPROC = 2, 2


class Run:
    def __init__(self, kind, args, workdir):
        self.kind, self.args = kind, args
        self.dir = tempfile.mkdtemp(prefix=f"{kind}-", dir=workdir)
        self.stamps = os.path.join(self.dir, "stamps")
        self.ckpt = os.path.join(self.dir, "ckpt")
        os.makedirs(self.stamps)
        os.makedirs(self.ckpt)
        self.tag = os.path.basename(self.dir)
        self.procs, self.faults = [], []

    def JobArgs(self):
        a = [JOB, "--steps", str(self.args.steps), "--ckpt-every", str(self.args.ckpt_every),
             "--ckpt-dir", self.ckpt, "--stamps", self.stamps, "--pg-timeout",
             str(self.args.pg_timeout)]
        if "inprocess" in self.kind:
            a.append("--in-process")
        if self.kind == "nvrx":
            a.append("--nvrx")
        return a + (["--ft-heartbeats"] if self.kind == "ft_launcher" else [])

    def Start(self):
        env = dict(os.environ, BENCH_GOODPUT_TAG=self.tag,
                   PYTHONPATH=os.path.join(ROOT, "python", "src"))
        if self.kind in ("torchrun2", "ft_launcher") and not self.args.shared_store:
            # torchrun 2.x hands its rendezvous store to the workers; on a restart here their
            # gloo mesh then fails to connect (stale addresses) until max_restarts is spent.
            env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"
        out = open(os.path.join(self.dir, "launcher.out"), "w")
        popen = dict(stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.invoked = time.time()
        if self.kind.startswith("dlaunch"):
            self.procs.append(subprocess.Popen(self.DlaunchCommand(), **popen))
            return
        port = FreePort()
        for _ in range(getattr(self.args, "nodes", NODES)):
            self.procs.append(subprocess.Popen(self.TorchrunCommand(port), **popen))

    def DlaunchCommand(self):
        nodes = getattr(self.args, "nodes", NODES)
        spares = getattr(self.args, "spares", 0)
        node_spec = (f"nodes:\n  min: {nodes}\n  max: {nodes}\n  spares: {spares}\n" if spares
                     else f"nodes: \"1:{nodes}\"\n")
        warm = "on" if self.kind.endswith("-warm") else "off"
        restart = "in_process" if "inprocess" in self.kind else "respawn"
        yaml = (f"name: goodput-bench\n{node_spec}nproc_per_node: {NPROC}\n"
                f"command: {json.dumps([self.args.python] + self.JobArgs())}\n"
                f"max_restarts: {self.args.max_restarts}\n"
                f"restart: {restart}\nrestarts:\n  warm_start: {warm}\n"
                "heartbeat:\n  interval: 1s\n  misses: 3\n"
                "stop:\n  grace: 2s\n  exit_timeout: 5s\n"
                f"health:\n  stall_timeout: {self.args.stall_timeout}s\n"
                "rendezvous:\n  join_timeout: 120s\n"
                f"  worker_store: {getattr(self.args, 'worker_store', 'rank0')}\n"
                "cpus:\n  binding: none\n")
        with open(os.path.join(self.dir, "job.yaml"), "w") as f:
            f.write(yaml)
        self.job_dir = os.path.join(self.dir, "job")
        return [self.args.dlaunch, "run", os.path.join(self.dir, "job.yaml"), "--job-dir",
                self.job_dir, "--no-preflight"]

    def TorchrunCommand(self, port):
        ft = ["--ft-workload-check-interval=1", "--ft-initial-rank-heartbeat-timeout=300",
              f"--ft-rank-heartbeat-timeout={self.args.stall_timeout}",
              "--ft-rank-termination-signal=SIGKILL", "--ft-enable-nic-monitor=false"]
        launcher = {"torchrun2": [self.args.python, "-m", "torch.distributed.run"],
                    # NVRx's in-process Wrapper under its launcher, which leaves a failed rank's
                    # peers running (min-healthy): the Wrapper restarts them in their processes.
                    "nvrx": [os.path.join(self.args.venv, "bin", "ft_launcher")] + ft +
                            ["--ft-restart-policy=min-healthy"],
                    "ft_launcher": [os.path.join(self.args.venv, "bin", "ft_launcher")] + ft}
        return launcher[self.kind] + [
            f"--nnodes=1:{getattr(self.args, 'nodes', NODES)}", "--rdzv_conf=last_call_timeout=3",
            "--rdzv_backend=c10d",
            f"--rdzv_endpoint=127.0.0.1:{port}", f"--rdzv_id={self.tag}",
            f"--nproc_per_node={NPROC}", f"--max_restarts={self.args.max_restarts}",
            "--monitor_interval=0.5"] + self.JobArgs()  # torchrun runs it with its own python

    def Records(self):
        out = []
        for name in os.listdir(self.stamps):
            if name.endswith(".jsonl"):
                with open(os.path.join(self.stamps, name)) as f:
                    out += [json.loads(line) for line in f if line.endswith("\n")]
        return out

    def Stepping(self, round_):
        """Rank 0 has made a step in `round_` (the job runs again after the last fault)."""
        return any(r["e"] == "step" and r["round"] == round_ and r["rank"] == 0
                   for r in self.Records())

    def RankPid(self, rank):
        for pid in ProcsWithEnv(f"BENCH_GOODPUT_TAG={self.tag}"):
            cmd = Cmdline(pid)  # not dlaunch's warm process, which has local rank 0's environment
            if (EnvOf(pid).get(b"RANK") == str(rank).encode() and "ddp_job" in cmd
                    and "dlaunch-zygote" not in cmd):
                return pid
        return None

    def Inject(self, fault):
        pid = self.RankPid({"crash": 1, "stall": 2, "node": 2}[fault])
        if pid is None:
            return False
        targets = [pid]
        if fault == "node":
            with open(f"/proc/{pid}/stat") as f:
                agent = int(f.read().rsplit(")", 1)[1].split()[1])
            targets = [agent] + Tree(agent)
        # The restarted ranks count their round from this file: written before the fault.
        with open(os.path.join(self.stamps, "faults"), "a") as f:
            f.write(f"{fault} {time.time():.6f}\n")
        self.faults.append((fault, time.time()))
        sig = signal.SIGSTOP if fault == "stall" else signal.SIGKILL
        for p in targets:
            try:
                os.kill(p, sig)
            except OSError:
                pass
        return True

    def Drive(self):
        first = WaitFor(lambda: self.Stepping(0) or not self.Running(), 300, period=0.2)
        if not first or not self.Running():
            return
        t0 = time.time()
        for i, fault in enumerate(self.args.faults):
            at = t0 + (i + 1) * self.args.fault_every
            while time.time() < at and self.Running():
                time.sleep(0.2)
            if not WaitFor(lambda: self.Stepping(i) or not self.Running(), 600, period=0.2):
                return
            if not self.Running() or not self.Inject(fault):
                return

    def Running(self):
        return any(p.poll() is None for p in self.procs)

    def Wait(self):
        deadline = time.time() + self.args.cap
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                pass
        self.ended = time.time()

    def Cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for pid in ProcsWithEnv(f"BENCH_GOODPUT_TAG={self.tag}"):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def Account(self):
        """dlaunch's own goodput account, from summary.json."""
        try:
            with open(os.path.join(self.job_dir, "summary.json")) as f:
                return json.load(f).get("goodput")
        except (AttributeError, OSError, ValueError):
            return None


def Tree(pid):
    out = []
    for c in Children(pid):
        out += [c] + Tree(c)
    return out


def RunOnce(kind, args, workdir):
    run = Run(kind, args, workdir)
    run.Start()
    try:
        run.Drive()
        run.Wait()
    finally:
        run.Cleanup()
    result = Analyse(kind, run.Records(), run.faults, run.invoked, run.ended, args.steps)
    result["exit_codes"] = [p.returncode for p in run.procs]
    if kind.startswith("dlaunch"):
        result["account"] = run.Account()
    if not args.keep:
        shutil.rmtree(run.dir, ignore_errors=True)
    else:
        result["dir"] = run.dir
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kinds", default="dlaunch,torchrun2,ft_launcher")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--ckpt-every", type=int, default=500)
    ap.add_argument("--fault-every", type=float, default=30)
    ap.add_argument("--faults", default="crash,stall,node")
    ap.add_argument("--stall-timeout", type=int, default=30)
    ap.add_argument("--pg-timeout", type=float, default=60)
    ap.add_argument("--max-restarts", type=int, default=5)
    ap.add_argument("--cap", type=float, default=900, help="a run's limit (s)")
    ap.add_argument("--venv", default=os.path.join(ROOT, "build-compare", "venv"))
    ap.add_argument("--dlaunch", default=os.path.join(ROOT, "build", "bin", "dlaunch"))
    ap.add_argument("--keep", action="store_true", help="keep each run's folder")
    ap.add_argument("--shared-store", action="store_true",
                    help="leave torchrun's rendezvous store shared with the workers (its default)")
    ap.add_argument("--json")
    ap.add_argument("--table-from", nargs="*", help="print the tables of earlier --json files")
    args = ap.parse_args()
    if args.table_from:
        results = []
        for path in args.table_from:
            with open(path) as f:
                results += json.load(f)["runs"]
        PrintTables(results)
        return 0
    args.faults = [f for f in args.faults.split(",") if f]
    args.python = os.path.join(args.venv, "bin", "python")
    args.dlaunch = os.path.abspath(args.dlaunch)
    kinds = args.kinds.split(",")
    # A SIGTERM to the bench still cleans up the run in progress (RunOnce's finally).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = tempfile.mkdtemp(prefix="dlaunch-goodput-bench-")
    results = []
    # Interleaved: every launcher once, then again, so the machine's load falls on all alike.
    for rep in range(args.reps):
        for kind in kinds:
            r = RunOnce(kind, args, workdir)
            r["rep"] = rep
            results.append(r)
            print(kind, json.dumps({k: v for k, v in r.items() if k != "account"}),
                  file=sys.stderr, flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({"args": vars(args), "runs": results}, f, indent=1)
    PrintTables(results)
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
