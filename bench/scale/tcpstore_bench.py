"""The workers' own store at scale: PyTorch's c10d TCPStore, hosted by "rank 0", against N
simulated ranks doing what init_process_group does with it (each rank connects, adds itself to a
counter, and waits until every rank has), from a few client processes on this machine.

    <venv>/bin/python bench/scale/tcpstore_bench.py [--ranks 1000,4000,16000] [--procs 8]

Prints one markdown row per N: time until every client is connected, time until the barrier
(every rank sees the count reach N), the server's libuv backend or not, and the PyTorch version.
Needs a PyTorch with torch.distributed (scripts/torch-venv.sh makes one).
"""
import argparse
import multiprocessing as mp
import os
import socket
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client(port, ranks, world, start, out):
    from torch.distributed import TCPStore
    from datetime import timedelta
    t0 = time.monotonic()
    stores = []
    for _ in ranks:
        stores.append(TCPStore("127.0.0.1", port, world, False, timeout=timedelta(seconds=600),
                               wait_for_workers=False))
    connected = time.monotonic()
    start.wait()
    for s, r in zip(stores, ranks):
        s.add("arrived", 1)
    # Each rank waits for the barrier; one key that the last arriving rank sets, as c10d's
    # store-based barrier does with its counter.
    for s in stores:
        while int(s.add("arrived", 0)) < world:
            time.sleep(0.01)
    out.put((connected - t0, time.monotonic()))


def run(world, procs, use_libuv):
    from torch.distributed import TCPStore
    from datetime import timedelta
    port = free_port()
    t0 = time.monotonic()
    server = TCPStore("127.0.0.1", port, world, True, timeout=timedelta(seconds=600),
                      wait_for_workers=False, use_libuv=use_libuv)
    ctx = mp.get_context("fork")
    start, out = ctx.Event(), ctx.Queue()
    per = [list(range(i, world, procs)) for i in range(procs)]
    ps = [ctx.Process(target=client, args=(port, r, world, start, out)) for r in per]
    for p in ps:
        p.start()
    results = []
    # Connection time: each process reports after its clients connected; the barrier starts at once.
    start.set()
    for _ in ps:
        results.append(out.get(timeout=900))
    end = max(r[1] for r in results)
    for p in ps:
        p.join()
    connect = max(r[0] for r in results)
    return connect, end - t0, getattr(server, "libuvBackend", None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="1000,4000,16000")
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--libuv", choices=["on", "off", "both"], default="both")
    args = ap.parse_args()
    import torch
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, {args.procs} client processes, "
          f"load average {os.getloadavg()[0]:.2f}")
    print("| ranks | backend | slowest client process connected (s) | every rank past the barrier (s) |")
    print("|---:|---|---:|---:|")
    modes = {"on": [True], "off": [False], "both": [True, False]}[args.libuv]
    for n in [int(x) for x in args.ranks.split(",")]:
        for uv in modes:
            try:
                connect, total, backend = run(n, args.procs, uv)
                print(f"| {n} | {'libuv' if uv else 'classic'} | {connect:.2f} | {total:.2f} |", flush=True)
            except Exception as e:  # a size that fails is a finding: say how
                print(f"| {n} | {'libuv' if uv else 'classic'} | failed: {e} | |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
