"""The workers' own store at scale, side by side: PyTorch's c10d TCPStore server (as rank 0
hosts it; 2.x: its libuv and classic backends) against the store node 0's agent serves
(agent/store/worker_store.h, run alone as build/bin/worker_store_server), each with N simulated ranks
doing what init_process_group does with it: every rank connects a TCPStore client, adds itself to
a counter, the last one sets a key, and every rank waits for that key.

    <python> bench/scale/tcpstore_bench.py [--ranks 1000,4000,16000] [--procs 8] [--reps 3]
        [--stores libuv,classic,agent] [--agent-bin build/bin/worker_store_server] [--cap 300]

The clients are the PyTorch this interpreter imports (Debian's 1.13 with /usr/bin/python3, 2.x
from scripts/torch-venv.sh), the same for every store; each server runs in a process of its own.
Stores are interleaved within each repetition. A run still unfinished after --cap seconds is
stopped and reported with how many ranks had connected; that store then skips the larger sizes.
Prints one markdown row per size and store: medians of the runs.
"""
import argparse
import multiprocessing as mp
import os
import socket
import statistics
import subprocess
import sys
import time


def serve_torch(backend):
    """--serve-torch: a TCPStore server alone, as rank 0 hosts it; prints its port."""
    from datetime import timedelta
    from torch.distributed import TCPStore
    kw = {} if backend == "classic-1.x" else {"use_libuv": backend == "libuv"}
    server = TCPStore("127.0.0.1", 0, None, True, timeout=timedelta(seconds=900),
                      wait_for_workers=False, **kw)
    print(server.port, flush=True)
    sys.stdin.read()  # the bench closes stdin to stop it


def start_server(store, agent_bin, torch1):
    if store == "agent":
        cmd = [agent_bin]
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "--serve-torch",
               "classic-1.x" if torch1 else store]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    if not line.strip().isdigit():
        raise RuntimeError(f"{cmd[0]} did not print a port: {line!r}")
    return p, int(line)


def client(port, n, world, connected, out):
    from datetime import timedelta
    from torch.distributed import TCPStore
    stores = []
    for _ in range(n):
        stores.append(TCPStore("127.0.0.1", port, world, False, timeout=timedelta(seconds=900),
                               wait_for_workers=False))
        with connected.get_lock():
            connected.value += 1
    # init_process_group's barrier, with a wait instead of polling: each rank adds itself, the
    # last one sets "done", every rank waits for it.
    for s in stores:
        if s.add("arrived", 1) == world:
            s.set("done", "1")
    for s in stores:
        s.wait(["done"])
    out.put(time.monotonic())


def run_once(store, world, procs, agent_bin, cap, torch1):
    server, port = start_server(store, agent_bin, torch1)
    ctx = mp.get_context("fork")
    connected, out = ctx.Value("l", 0), ctx.Queue()
    shares = [world // procs + (1 if i < world % procs else 0) for i in range(procs)]
    t0 = time.monotonic()
    ps = [ctx.Process(target=client, args=(port, n, world, connected, out)) for n in shares]
    for p in ps:
        p.start()
    deadline, t_connect, ends = t0 + cap, None, []
    while time.monotonic() < deadline and len(ends) < procs:
        if t_connect is None and connected.value >= world:
            t_connect = time.monotonic() - t0
        try:
            ends.append(out.get(timeout=0.01))
        except Exception:
            pass
    got, elapsed = connected.value, time.monotonic() - t0
    for p in ps:
        if p.is_alive():
            p.kill()
        p.join()
    server.stdin.close()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
    if len(ends) < procs:
        return {"ok": False, "connected": got, "elapsed": elapsed}
    if t_connect is None:
        t_connect = max(ends) - t0
    return {"ok": True, "connect": t_connect, "barrier": max(ends) - t0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="1000,4000,16000")
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--stores", default="libuv,classic,agent")
    ap.add_argument("--agent-bin", default="build/bin/worker_store_server")
    ap.add_argument("--cap", type=float, default=300)
    ap.add_argument("--serve-torch", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_torch:
        return serve_torch(args.serve_torch)
    import torch
    torch1 = torch.__version__.startswith("1.")
    stores = [s for s in args.stores.split(",") if not (torch1 and s == "libuv")]
    t = time.monotonic()
    name = socket.getnameinfo(("::ffff:127.0.0.1", 0, 0, 0), socket.NI_NUMERICSERV)[0]
    lookup_ms = (time.monotonic() - t) * 1000
    print(f"torch {torch.__version__} clients, {os.cpu_count()} CPUs, {args.procs} client "
          f"processes, load average {os.getloadavg()[0]:.2f}; ::ffff:127.0.0.1 reverse lookup: "
          f"{name!r} in {lookup_ms:.1f} ms", flush=True)
    print("| ranks | store | runs done | all connected, median (s) | every rank past the barrier, "
          "median (s) |")
    print("|---:|---|---:|---:|---:|", flush=True)
    stopped = set()
    for n in [int(x) for x in args.ranks.split(",")]:
        runs = {s: [] for s in stores}
        for _ in range(args.reps):
            for s in stores:
                if s in stopped:
                    continue
                r = run_once(s, n, args.procs, args.agent_bin, args.cap, torch1)
                runs[s].append(r)
                if not r["ok"]:
                    stopped.add(s)
        for s in stores:
            rs = runs[s]
            if not rs:
                continue
            done = [r for r in rs if r["ok"]]
            label = {"agent": "agent store", "libuv": "torch libuv",
                     "classic": "torch classic"}[s]
            if done:
                c = statistics.median(r["connect"] for r in done)
                b = statistics.median(r["barrier"] for r in done)
                print(f"| {n:,} | {label} | {len(done)}/{len(rs)} | {c:.2f} | {b:.2f} |",
                      flush=True)
            for r in rs:
                if not r["ok"]:
                    print(f"| {n:,} | {label} | stopped | {r['connected']:,} of {n:,} "
                          f"connected after {r['elapsed']:.0f} s | - |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
