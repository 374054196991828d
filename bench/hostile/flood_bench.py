#!/usr/bin/env python3
"""A worker flooding its stdout under `dlaunch run` (1 node, 1 rank): how fast it could write,
what the agent kept in the rank's log and what it cut, how much reached the launcher's terminal,
and the peak resident memory (VmHWM, sampled every 20 ms) of the agent and the launcher.

  bench/hostile/flood_bench.py [--dlaunch build/bin/dlaunch] [--rates 100,0] [--seconds 5]
                               [--log-limit 256M] [--reps 2]

A rate of 0 writes as fast as the pipe takes it. Prints a markdown table.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

# 1 KiB lines in 1 MiB writes and, every 16 MiB, a 200 KiB line (cut at 64 KiB by the agent).
FLOODER = r'''import os, sys, time
report, seconds, rate = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]) * 1e6
chunk = (b"f" * 1023 + b"\n") * 1024
long_line = b"L" * (200 << 10) + b"\n"
def write_all(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]
    return len(data)
written, lines, start = 0, 0, time.monotonic()
while time.monotonic() - start < seconds:
    written += write_all(chunk)
    lines += 1024
    if written % (16 << 20) < len(chunk):
        written += write_all(long_line)
        lines += 1
    while rate > 0 and written > rate * (time.monotonic() - start):
        time.sleep(0.001)
with open(report, "w") as f:
    f.write("%d %d %f\n" % (written, lines, time.monotonic() - start))
'''


def status_kb(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def agent_pids(job_dir):
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if (job_dir + "/token").encode() in f.read():
                    pids.append(int(name))
        except OSError:
            pass
    return pids


def parse_limit(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text.upper())
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def run_once(dlaunch, rate, seconds, log_limit, tmp):
    job = os.path.join(tmp, f"job-{rate}-{time.monotonic_ns()}")
    flood = os.path.join(tmp, "flood.py")
    written_file = os.path.join(tmp, "written")
    with open(flood, "w") as f:
        f.write(FLOODER)
    env = dict(os.environ, DLAUNCH_WORKER_LOG_LIMIT=log_limit)
    out_path = os.path.join(tmp, "stdout")
    peaks = {"agent": 0, "launcher": 0}
    start = time.monotonic()
    with open(out_path, "wb") as out:
        proc = subprocess.Popen([dlaunch, "run", "--nnodes", "1", "--job-dir", job, "--",
                                 sys.executable, flood, written_file, str(seconds), str(rate)],
                                stdout=out, stderr=subprocess.PIPE, env=env)
        done = threading.Event()

        def sample():
            agents = []
            while not done.is_set():
                peaks["launcher"] = max(peaks["launcher"], status_kb(proc.pid, "VmHWM"))
                agents = agents or agent_pids(job)
                for pid in agents:
                    peaks["agent"] = max(peaks["agent"], status_kb(pid, "VmHWM"))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample)
        sampler.start()
        _, err = proc.communicate(timeout=600)
        done.set()
        sampler.join()
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"dlaunch run exited {proc.returncode}:\n{err.decode(errors='replace')[-3000:]}")
    written, lines, elapsed = open(written_file).read().split()
    written, lines, elapsed = int(written), int(lines), float(elapsed)
    log = os.path.join(job, "logs", "rank-0.log")
    tail = subprocess.run(["tail", "-c", "300", log], capture_output=True, text=True).stdout
    m = re.search(r"keeps the first (\d+) bytes of output; (\d+) more bytes were not kept", tail)
    kept = int(m.group(1)) if m else os.path.getsize(log)
    not_kept = int(m.group(2)) if m else 0
    shown = 0
    cut_shown = 0
    with open(out_path, "rb") as f:
        for line in f:
            if b"ffff" in line or b"LLLL" in line:
                shown += 1
                cut_shown += b"more bytes in logs/rank-0.log]" in line
    subprocess.run(["rm", "-rf", job])
    return dict(written=written, lines=lines, elapsed=elapsed, kept=kept, not_kept=not_kept,
                shown=shown, cut_shown=cut_shown, agent=peaks["agent"], launcher=peaks["launcher"],
                wall=wall)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dlaunch", default="build/bin/dlaunch")
    ap.add_argument("--rates", default="100,0", help="MB/s, comma-separated; 0 = unthrottled")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--log-limit", default="256M")
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    limit = parse_limit(args.log_limit)
    print(f"{args.seconds:g} s of output per run, log limit {args.log_limit}, {args.reps} run(s) "
          "each; medians (peak RSS: the highest)\n")
    print("| target MB/s | written MB | achieved MB/s | log kept MB | not kept MB | "
          "lines written | lines shown live | shown cut at 4 KiB | agent peak RSS MiB | "
          "launcher peak RSS MiB | job s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="dlaunch-flood-") as tmp:
        for rate in [float(r) for r in args.rates.split(",")]:
            runs = [run_once(args.dlaunch, rate, args.seconds, args.log_limit, tmp)
                    for _ in range(args.reps)]
            med = lambda k: statistics.median(r[k] for r in runs)
            for r in runs:
                assert r["kept"] + r["not_kept"] == r["written"] or r["written"] <= limit, r
            print(f"| {rate:g} | {med('written') / 1e6:.0f} | "
                  f"{med('written') / med('elapsed') / 1e6:.0f} | {med('kept') / 1e6:.0f} | "
                  f"{med('not_kept') / 1e6:.0f} | {med('lines'):.0f} | {med('shown'):.0f} | "
                  f"{med('cut_shown'):.0f} | {max(r['agent'] for r in runs) / 1024:.0f} | "
                  f"{max(r['launcher'] for r in runs) / 1024:.0f} | {med('wall'):.1f} |")


if __name__ == "__main__":
    main()
