#!/usr/bin/python3
"""The launcher's control plane at 100..10,000 nodes: a real `dlaunch run` against load_agents.

For each N, `dlaunch run --launcher mpiexec --launcher-cmd "load_agents --agents N ..."` starts
one load_agents process that plays N agents of 4 ranks over loopback TCP (bench/scale/
load_agents.cc): all N join at once, heartbeat once a second with one report per rank, one node is
lost at --lose-at-s (the launcher restarts the others in round 1, --max-restarts 1), and every rank
succeeds at --run-s. From the job's events.jsonl and from sampling the launcher's /proc we report
  rendezvous_s   rendezvous_closed - job_started
  started_s      round 0's workers_started elapsed_s (every rank STARTED)
  detect_s       the lost node's session cancelled (load_agents' clock) -> failure_detected
  restart_s      round 1's workers_started restart_s (the lost node's detection -> round 1 running)
  cpu_r0 / cpu_r1  the launcher's CPU (utime+stime, % of one core) over the steady heartbeat phase
                 of round 0 (workers_started + 1 s .. node_lost - 0.5 s) and of round 1
  max RSS        the launcher's VmHWM
  exit_s         the last rank's SUCCEEDED (worker_ended) -> the launcher's exit
  result         job_finished's result and dlaunch's exit code
  stop_s         the stop fan-out: failure_detected -> the last agent's round stop received, and
                 stop_requested (job finished) -> the last agent's exit stop received
and the load generator's own line (joins, sessions, messages, commands, errors) and CPU. Only the
Python standard library is used; run it with /usr/bin/python3 (run.sh does).
"""

import argparse
import json
import os
import resource
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time

import relay_kill
from procfs import TICKS, CpuTicks, ParseTime

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def FindBinary(explicit, name):
    if explicit:
        return os.path.abspath(explicit)
    for d in ("build-scale", "build"):
        cand = os.path.join(REPO, d, "bin", name)
        if os.access(cand, os.X_OK):
            return cand
    sys.exit(f"scale_bench: {name} not found; pass --{name.replace('_', '-')} PATH")




def Status(pid):
    try:
        out = {}
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmHWM", "VmRSS", "Threads"):
                    out[k] = int(v.split()[0])
        return out
    except OSError:
        return None


def Children(pid):
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids


def Comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


class Sampler(threading.Thread):
    """Samples the launcher, its load_agents child and its relays (dlaunch-relay children, summed)
    every `period` s: (wall time, ticks)."""

    def __init__(self, pid, period=0.25):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.launcher, self.generator, self.relays = [], [], []
        self.hwm_kb, self.threads, self.gen_hwm_kb, self.relay_hwm_kb = 0, 0, 0, 0
        self.relay_count = 0
        self.stop = threading.Event()

    def run(self):
        gen, relays = None, set()
        while not self.stop.is_set():
            now = time.time()
            t = CpuTicks(self.pid)
            st = Status(self.pid)
            if t is not None:
                self.launcher.append((now, t))
            if st:
                self.hwm_kb = max(self.hwm_kb, st.get("VmHWM", 0))
                self.threads = max(self.threads, st.get("Threads", 0))
            if gen is None or len(relays) == 0:
                for k in Children(self.pid):
                    comm = Comm(k)
                    if comm.startswith("dlaunch-relay"):
                        relays.add(k)
                    elif comm.startswith("load_agents"):
                        gen = k
                self.relay_count = max(self.relay_count, len(relays))
            if relays:
                ticks = [CpuTicks(r) for r in relays]
                if all(x is not None for x in ticks):
                    self.relays.append((now, sum(ticks)))
                    hwm = sum((Status(r) or {}).get("VmHWM", 0) for r in relays)
                    self.relay_hwm_kb = max(self.relay_hwm_kb, hwm)
            if gen is not None:
                g = CpuTicks(gen)
                gs = Status(gen)
                if g is not None:
                    self.generator.append((now, g))
                if gs:
                    self.gen_hwm_kb = max(self.gen_hwm_kb, gs.get("VmHWM", 0))
            self.stop.wait(self.period)


def CpuPercent(samples, t0, t1):
    """% of one core between the samples nearest t0 and t1 (None when the window is too short)."""
    inside = [s for s in samples if t0 <= s[0] <= t1]
    if len(inside) < 2 or inside[-1][0] - inside[0][0] < 1.0:
        return None
    (a, ta), (b, tb) = inside[0], inside[-1]
    return 100.0 * (tb - ta) / TICKS / (b - a)



def ReadEvents(path, lost_node):
    out = {"workers_started": {}, "last_success": None, "node_lost": None, "finished": None,
           "job_started": None, "rendezvous_closed": None, "detected": None, "first_success": None,
           "stop_requested": None, "lines": 0}
    try:
        f = open(path)
    except OSError:
        return out
    with f:
        for line in f:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            out["lines"] += 1
            t = ParseTime(d["time"])
            rnd = d.get("round", 0)
            if "job_started" in d:
                out["job_started"] = t
            elif "rendezvous_closed" in d:
                out["rendezvous_closed"] = t
            elif "workers_started" in d:
                out["workers_started"][rnd] = (t, d["workers_started"])
            elif "node_lost" in d and out["node_lost"] is None:
                out["node_lost"] = t
            elif ("failure_detected" in d and out["detected"] is None and
                  d["failure_detected"].get("failure", {}).get("node_id") == lost_node):
                out["detected"] = t
            elif "worker_ended" in d and d["worker_ended"].get("state") == "succeeded":
                out["last_success"] = t
                if out["first_success"] is None:
                    out["first_success"] = t
            elif "stop_requested" in d:
                out["stop_requested"] = t
            elif "job_finished" in d:
                out["finished"] = (t, d["job_finished"])
    return out


def Fmt(v, spec="{:.2f}"):
    return "-" if v is None else spec.format(v)


def RunOne(args, dlaunch, load_agents, n):
    work = tempfile.mkdtemp(prefix=f"dlaunch-scale-{n}-")
    job_dir = os.path.join(work, "job")
    summary = os.path.join(work, "load_agents.txt")
    prefix = (f"{load_agents} --agents {n} --slots {args.slots} --run-s {args.run_s} "
              f"--lose-at-s {args.lose_at_s} --channels {args.channels} "
              f"--log-lines-per-s {args.log_lines_per_s} --silent-connections {args.silent_connections} "
              f"--slow-readers {args.slow_readers} --summary {summary}"
              + (" --no-batch" if args.no_batch else "")
              + f" --start-threads {args.start_threads}")
    cmd = [dlaunch, "run", "--launcher", "mpiexec", "--launcher-cmd", prefix,
           "--hosts", f"h[0-{n - 1}]", "--nproc-per-node", str(args.slots),
           "--heartbeat", "1", "--max-restarts", "1", "--job-dir", job_dir,
           "--join-timeout", str(args.join_timeout)]
    if args.lose_at_s > 0:
        # The job may go on without the lost node, and without slow readers that do not end
        # their round within the stop's grace (they count as lost too).
        cmd += ["--nnodes", f"{n - 1 - min(args.slow_readers, n - 2)}:{n}"]
    cmd += args.dlaunch_flags.split() + ["--", "true"]
    log_path = os.path.join(work, "dlaunch.out")
    t_start = time.time()
    with open(log_path, "wb") as log:
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=work)
        sampler = Sampler(p.pid)
        sampler.start()
        killer = None
        if args.kill_relay_at_s > 0:
            killer = relay_kill.RelayKiller(job_dir, args.kill_relay_at_s)
            killer.start()
        timed_out = False
        try:
            rc = p.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            p.send_signal(signal.SIGTERM)
            try:
                rc = p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = p.wait()
        t_exit = time.time()
        sampler.stop.set()
        sampler.join()
        if killer:
            killer.stop.set()
            killer.join()
    ev = ReadEvents(os.path.join(job_dir, "events.jsonl"), n - 1)  # load_agents loses the last
    row = {"n": n, "rc": rc, "timed_out": timed_out, "wall_s": t_exit - t_start, "work": work,
           "command": shlex.join(cmd)}
    if ev["job_started"] and ev["rendezvous_closed"]:
        row["rendezvous_s"] = ev["rendezvous_closed"] - ev["job_started"]
    ws0 = ev["workers_started"].get(0)
    ws1 = ev["workers_started"].get(1)
    if ws0:
        row["started_s"] = ws0[1].get("elapsed_s")
    if ws1:
        row["restart_s"] = ws1[1].get("restart_s")
    if ws0:
        end0 = (ev["node_lost"] or ev["first_success"] or t_exit) - 0.5
        row["cpu_r0"] = CpuPercent(sampler.launcher, ws0[0] + 1.0, end0)
        row["gen_cpu_r0"] = CpuPercent(sampler.generator, ws0[0] + 1.0, end0)
        row["relay_cpu_r0"] = CpuPercent(sampler.relays, ws0[0] + 1.0, end0)
    if ws1:
        end1 = (ev["first_success"] or t_exit) - 0.5
        row["cpu_r1"] = CpuPercent(sampler.launcher, ws1[0] + 1.0, end1)
        row["relay_cpu_r1"] = CpuPercent(sampler.relays, ws1[0] + 1.0, end1)
    row["hwm_mb"] = sampler.hwm_kb / 1024.0
    row["threads"] = sampler.threads
    row["gen_hwm_mb"] = sampler.gen_hwm_kb / 1024.0
    row["relays"] = sampler.relay_count
    row["relay_hwm_mb"] = sampler.relay_hwm_kb / 1024.0
    if ev["last_success"]:
        row["exit_s"] = t_exit - ev["last_success"]
    row["result"] = ev["finished"][1].get("result") if ev["finished"] else "none"
    row["events_lines"] = ev["lines"]
    if killer:
        row["relay_kill"] = relay_kill.Summarize(os.path.join(job_dir, "events.jsonl"), killer.killed_at)
    try:
        with open(summary) as f:
            row["generator"] = f.read().strip()
    except OSError:
        row["generator"] = "(no summary: load_agents did not finish)"
    m = re.search(r"lost at unix ([0-9.]+)", row["generator"])
    lost_at = float(m.group(1)) if m else 0
    # The restart's last second on the generator's side, seconds after the lost session's end:
    # when the StartRounds sent ahead arrived, and when their held starts went out.
    h = re.search(r"restart starts received at unix ([0-9.]+) to ([0-9.]+), started at unix "
                  r"([0-9.]+) to ([0-9.]+)", row["generator"])
    if h and lost_at > 0 and float(h.group(1)) > 0:
        row["held"] = [float(x) - lost_at for x in h.groups()]
    if m and float(m.group(1)) > 0 and ev["detected"]:
        # The lost session's end to the launcher's failure_detected for that node (another node's
        # failure may come first): mostly the backlog of the launcher's event loop.
        row["detect_s"] = ev["detected"] - float(m.group(1))
    # The stop fan-out: the launcher's decision (failure_detected for the restart's stop,
    # stop_requested for the job's end) to the last simulated agent that received it.
    m = re.search(r"round stops at unix [0-9.]+ to ([0-9.]+), exit stops at unix [0-9.]+ to ([0-9.]+)",
                  row["generator"])
    if m:
        if float(m.group(1)) > 0 and ev["detected"]:
            row["restart_stop_s"] = float(m.group(1)) - ev["detected"]
        if float(m.group(2)) > 0 and ev["stop_requested"]:
            row["exit_stop_s"] = float(m.group(2)) - ev["stop_requested"]
    with open(log_path, errors="replace") as f:
        lines = [l.rstrip("\n") for l in f]
    # The per-rank table at the end has one line per rank: keep the lines around it short.
    row["tail"] = [l for l in lines if not l.startswith("[dlaunch]     ")][-15:]
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100,1000,4000,10000")
    ap.add_argument("--dlaunch")
    ap.add_argument("--load-agents")
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--run-s", type=float, default=40)
    ap.add_argument("--lose-at-s", type=float, default=10)
    ap.add_argument("--channels", type=int, default=8)
    ap.add_argument("--log-lines-per-s", type=float, default=0)
    ap.add_argument("--silent-connections", type=int, default=0,
                    help="TCP connections to the launcher that never send (overload)")
    ap.add_argument("--slow-readers", type=int, default=0,
                    help="agents that read one command every 2 s (overload)")
    ap.add_argument("--start-threads", type=int, default=4,
                    help="load_agents threads that start the held rounds of a restart and "
                         "report every rank's success (1: one agent after another, as before)")
    ap.add_argument("--no-batch", action="store_true",
                    help="simulated agents send each message alone (as before AgentBatch)")
    ap.add_argument("--join-timeout", type=float, default=300)
    ap.add_argument("--timeout", type=float, default=240, help="per size, seconds")
    ap.add_argument("--json", help="write the rows here too")
    ap.add_argument("--dlaunch-flags", default="", help="extra `dlaunch run` flags, e.g. --no-tls")
    ap.add_argument("--kill-relay-at-s", type=float, default=0,
                    help="SIGKILL relay 0 this long after round 0 started (with --relay-fanout)")
    args = ap.parse_args()
    dlaunch = FindBinary(args.dlaunch, "dlaunch")
    load_agents = FindBinary(args.load_agents, "load_agents")
    # Each agent's streams share the generator's few connections, but the launcher may open a
    # file per node: give both the hard limit.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rows = []
    for n in [int(x) for x in args.sizes.split(",")]:
        print(f"scale_bench: N={n} ...", file=sys.stderr, flush=True)
        row = RunOne(args, dlaunch, load_agents, n)
        rows.append(row)
        print(f"  {row['command']}", file=sys.stderr)
        print(f"  {row['generator']}", file=sys.stderr)
        if row["rc"] != 0 or row["result"] != "succeeded":
            print(f"  dlaunch exit {row['rc']}, result {row['result']}; its last lines:",
                  file=sys.stderr)
            for l in row["tail"]:
                print(f"    | {l}", file=sys.stderr)
        print(f"  work dir {row['work']}", file=sys.stderr, flush=True)
    load = os.getloadavg()
    print(f"\n{os.cpu_count()} CPUs, load average {load[0]:.2f} after the runs; heartbeat 1 s, "
          f"{args.slots} ranks per agent, lose a node at {args.lose_at_s} s, succeed at "
          f"{args.run_s} s, {args.channels} connections\n")
    print("| N | rendezvous s | all started s | loss detected s | restart s | stop fan-out s "
          "(restart / exit) | launcher CPU % r0 / r1 | launcher max RSS MB | threads | "
          "success -> exit s | result (rc) | load_agents CPU % r0 | relays: n, CPU % r0 / r1 "
          "(all together), max RSS MB (sum) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']} | {Fmt(r.get('rendezvous_s'))} | {Fmt(r.get('started_s'))} | "
              f"{Fmt(r.get('detect_s'))} | {Fmt(r.get('restart_s'))} | "
              f"{Fmt(r.get('restart_stop_s'))} / {Fmt(r.get('exit_stop_s'))} | "
              f"{Fmt(r.get('cpu_r0'), '{:.0f}')} / "
              f"{Fmt(r.get('cpu_r1'), '{:.0f}')} | {r['hwm_mb']:.0f} | {r['threads']} | "
              f"{Fmt(r.get('exit_s'))} | {r['result']} ({r['rc']}"
              f"{', timed out' if r['timed_out'] else ''}) | "
              f"{Fmt(r.get('gen_cpu_r0'), '{:.0f}')} | "
              + (f"{r['relays']}, {Fmt(r.get('relay_cpu_r0'), '{:.0f}')} / "
                 f"{Fmt(r.get('relay_cpu_r1'), '{:.0f}')}, {r['relay_hwm_mb']:.0f} |"
                 if r.get("relays") else "- |"))
    if any(r.get("held") for r in rows):
        print("\nthe restart, seconds after the lost session's end (the generator's clock):\n")
        print("| N | StartRounds received, first / last | ranks started, first / last | "
              "restart s (the launcher's) |")
        print("|---|---|---|---|")
        for r in rows:
            h = r.get("held")
            if h:
                print(f"| {r['n']} | {h[0]:.2f} / {h[1]:.2f} | {h[2]:.2f} / {h[3]:.2f} | "
                      f"{Fmt(r.get('restart_s'))} |")
    if args.kill_relay_at_s > 0:
        print(f"\nrelay 0 killed {args.kill_relay_at_s} s after round 0 started:\n")
        print("| N | sessions moved | named by relay_lost | kill -> relay_lost s | "
              "relay_lost -> last back s | nodes lost | last round |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            k = r.get("relay_kill", {})
            print(f"| {r['n']} | {k.get('moved', '-')} | {k.get('named', '-')} | {Fmt(k.get('lost_s'))} | "
                  f"{Fmt(k.get('back_s'))} | {k.get('nodes_lost', '-')} | {k.get('rounds', '-')} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
