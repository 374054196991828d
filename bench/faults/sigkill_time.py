#!/usr/bin/python3
"""How long a SIGKILL takes to end a training rank and have it reaped: the kill slack of
LivenessPolicy (common/liveness_policy.h), which the launcher adds to a lost node's lease
before the next round may start.

Each repetition starts --ranks processes, each in a process group of its own as dlaunch's agent
starts its workers, that import torch (Debian's /usr/bin/python3 has it) and then hold
--gb GiB of touched memory; once all say they are ready, SIGKILL goes to every group and the
time is taken until the last one is reaped (waitpid), which is when the kernel has torn it
down. Prints the median and the maximum per memory size.

  sigkill_time.py [--reps 20] [--ranks 2] [--gb 0,1,4] [--no-torch]
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

CHILD = r"""
import sys
if sys.argv[1] == "1":
    import torch  # noqa: F401
gb = float(sys.argv[2])
block = bytearray(int(gb * (1 << 30)))
for i in range(0, len(block), 4096):
    block[i] = 1
sys.stdout.write("ready\n")
sys.stdout.flush()
import time
time.sleep(3600)
"""


def OneKill(ranks, gb, torch):
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, "1" if torch else "0", str(gb)],
                              stdout=subprocess.PIPE, start_new_session=True)
             for _ in range(ranks)]
    for p in procs:
        if p.stdout.readline().strip() != b"ready":
            raise SystemExit("a child did not start")
    start = time.monotonic()
    for p in procs:
        os.killpg(p.pid, signal.SIGKILL)
    for p in procs:
        os.waitpid(p.pid, 0)
    took = time.monotonic() - start
    for p in procs:
        p.stdout.close()
    return took


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--gb", default="0,1,4")
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()
    print(f"{args.ranks} rank(s) per kill, torch {'not ' if args.no_torch else ''}imported, "
          f"{args.reps} reps; SIGKILL to every group -> the last reaped")
    print("| memory per rank | median ms | max ms |")
    print("|---|---|---|")
    for gb in [float(g) for g in args.gb.split(",")]:
        times = [OneKill(args.ranks, gb, not args.no_torch) * 1000 for _ in range(args.reps)]
        print(f"| {gb:g} GiB | {statistics.median(times):.1f} | {max(times):.1f} |", flush=True)


if __name__ == "__main__":
    main()
