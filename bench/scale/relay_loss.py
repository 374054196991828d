#!/usr/bin/python3
"""A relay killed under a running job of real agents: do its nodes move or are they lost?

`dlaunch run --nnodes N --nproc-per-node 1 --relay-fanout K --max-restarts 1` of a worker that
waits (`cat` of a FIFO: no CPU while it waits); once every worker runs and a few heartbeats have
passed, relay 0 is SIGKILLed. With a stop grace its N/R agents move their sessions to the
launcher (docs/relays.md); with --grace 0 they cannot, their nodes are lost and round 1 runs on
the others. The workers are then released (the FIFO opened and closed: every `cat` ends, exit 0)
and the job's end awaited. From events.jsonl and /proc:
  moved          session_resumed events, against the relay's nodes
  named          the nodes relay_lost named (the others had moved before the launcher saw it go)
  lost_s         relay_lost - the kill (the launcher seeing the relay's stream end)
  back_s         the last session_resumed's after_s (relay_lost -> the last node back)
  launcher_cpu   the launcher's CPU (% of a core) from the kill to the last node back (or 5 s)
  node_lost      node_lost events; round1_s: the kill -> round 1's workers_started (if any)
  result         dlaunch's exit code, and processes of the job left after it
Standard library only:
    bench/scale/relay_loss.py --dlaunch build/bin/dlaunch --nodes 512 --fanout 128 --reps 3
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from procfs import TICKS, CpuTicks, Pids
from procfs import ParseTime as Stamp


def Events(job_dir):
    try:
        with open(os.path.join(job_dir, "events.jsonl")) as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return []


def WaitFor(pred, timeout_s, step_s=0.1):
    end = time.time() + timeout_s
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(step_s)
    return None


def Rep(args, rep):
    tmp = tempfile.mkdtemp(prefix="dlaunch-relayloss-")
    job_id = os.path.basename(tmp)
    job_dir = os.path.join(tmp, job_id)
    fifo = os.path.join(tmp, "go")
    os.mkfifo(fifo)
    # nodes.min at half: with no grace the job goes on without relay 0's nodes.
    argv = [args.dlaunch, "run", "--nnodes", f"{args.nodes // 2}:{args.nodes}", "--nproc-per-node", "1",
            "--job-dir", job_dir, "--heartbeat", "1", "--grace", str(args.grace),
            "--relay-fanout", str(args.fanout), "--max-restarts", "1", "--", "cat", fifo]
    log = open(os.path.join(tmp, "dlaunch.log"), "w")
    run = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
    row = {"rep": rep, "grace": args.grace}
    started = WaitFor(lambda: any("workers_started" in e for e in Events(job_dir)), 300)
    if not started:
        run.kill()
        row["result"] = "round 0 never started"
        return row
    time.sleep(args.settle_s)
    relay0 = Pids(os.path.join(job_dir, "relays", "relay-0.port"))
    relay0 = [p for p in relay0 if p != run.pid]
    # dlaunch deals node i to relay i % R: relay 0 has the nodes 0, R, 2R, ...
    relays = -(-args.nodes // args.fanout)
    expected = len(range(0, args.nodes, relays))
    t0_ticks = CpuTicks(run.pid)
    t_kill = time.time()
    os.kill(relay0[0], signal.SIGKILL)

    def Back():
        ev = Events(job_dir)
        resumed = [e for e in ev if "session_resumed" in e]
        round1 = [e for e in ev if "workers_started" in e and e.get("round", 0) == 1]
        if len(resumed) >= expected or round1:
            return ev
        return None

    ev = WaitFor(Back, 90) or Events(job_dir)
    t_back = time.time()
    t1_ticks = CpuTicks(run.pid)
    if t0_ticks is not None and t1_ticks is not None:
        row["launcher_cpu"] = round(100.0 * (t1_ticks - t0_ticks) / TICKS / max(t_back - t_kill, 1e-3))
    resumed = [e for e in ev if "session_resumed" in e]
    lost = [e for e in ev if "relay_lost" in e]
    # relay_lost names the sessions still on the relay when the launcher saw it go; an agent
    # quicker than that replaced its session first.
    row["moved"] = f"{len(resumed)}/{expected}"
    if lost:
        row["named"] = lost[0]["relay_lost"]["nodes"]
    if lost:
        row["lost_s"] = round(Stamp(lost[0]["time"]) - t_kill, 3)
    if resumed:
        row["back_s"] = round(max(e["session_resumed"].get("after_s", 0) for e in resumed), 3)
    row["node_lost"] = sum(1 for e in ev if "node_lost" in e)
    round1 = [e for e in ev if "workers_started" in e and e.get("round", 0) == 1]
    if round1:
        row["round1_s"] = round(Stamp(round1[0]["time"]) - t_kill, 2)
    # Release the workers: every `cat` of the FIFO ends when this writer closes.
    fd = os.open(fifo, os.O_WRONLY)
    os.close(fd)
    try:
        code = run.wait(timeout=180)
    except subprocess.TimeoutExpired:
        run.kill()
        code = "timeout"
    left = WaitFor(lambda: not Pids("DLAUNCH_JOB_ID=" + job_id), 10)
    row["result"] = f"exit {code}, {'nothing' if left else len(Pids('DLAUNCH_JOB_ID=' + job_id))} left"
    log.close()
    if not args.keep:
        subprocess.run(["rm", "-rf", tmp])
    else:
        row["dir"] = tmp
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dlaunch", required=True)
    p.add_argument("--nodes", type=int, default=512)
    p.add_argument("--fanout", type=int, default=128)
    p.add_argument("--grace", type=float, default=2)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--settle-s", type=float, default=3)
    p.add_argument("--keep", action="store_true", help="keep each job's directory")
    args = p.parse_args()
    args.dlaunch = os.path.abspath(args.dlaunch)
    cols = ["rep", "grace", "moved", "named", "lost_s", "back_s", "launcher_cpu", "node_lost", "round1_s", "result"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for rep in range(1, args.reps + 1):
        row = Rep(args, rep)
        print("| " + " | ".join(str(row.get(c, "-")) for c in cols) + " |", flush=True)
        if "dir" in row:
            print(f"  kept: {row['dir']}", file=sys.stderr)


if __name__ == "__main__":
    main()
