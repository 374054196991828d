#!/usr/bin/env python3
"""A small real multi-rank program for the cluster tests, using only the standard library.

Checks the torchrun-style environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), then
does a TCP barrier: rank 0 listens on MASTER_ADDR:MASTER_PORT (the port meant for the
workers' own store, so listening there is exactly what a real trainer does), every other
rank connects and says who and where it is, and rank 0 answers each with the list of hosts
once all WORLD_SIZE ranks have arrived. Each rank prints one line naming its host and the
hosts of the whole job, so a test can see that the job really spanned several hosts.

  tcp_barrier_worker.py [--sleep SECONDS] [--timeout SECONDS]

--sleep keeps every rank alive after the barrier (a long job, for cancel tests).
Exit status: 0 after the barrier, 1 on a bad environment or a barrier failure.
"""
import argparse
import os
import socket
import sys
import time


def fail(msg):
    print(f"tcp_barrier_worker: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def env_int(name):
    value = os.environ.get(name)
    if value is None:
        fail(f"{name} is not set")
    try:
        return int(value)
    except ValueError:
        fail(f"{name}={value!r} is not an integer")


def read_line(conn, deadline):
    data = b""
    while not data.endswith(b"\n"):
        conn.settimeout(max(0.1, deadline - time.monotonic()))
        chunk = conn.recv(4096)
        if not chunk:
            raise ConnectionError("peer closed before a full line")
        data += chunk
    return data.decode().strip()


def rank0(port, world, me, deadline):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(world)
    peers = {0: me}
    conns = []
    while len(peers) < world:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            fail(f"barrier timed out: {len(peers)} of {world} ranks arrived: {sorted(peers)}")
        server.settimeout(remaining)
        try:
            conn, _ = server.accept()
        except socket.timeout:
            continue
        rank_text, host = read_line(conn, deadline).split(" ", 1)
        rank = int(rank_text)
        if rank in peers or not 0 < rank < world:
            fail(f"unexpected rank {rank} from {host}")
        peers[rank] = host
        conns.append(conn)
    hosts = ",".join(sorted(set(peers.values())))
    for conn in conns:
        conn.sendall(f"go {hosts}\n".encode())
        conn.close()
    server.close()
    return hosts


def other_rank(addr, port, rank, me, deadline):
    while True:
        try:
            conn = socket.create_connection((addr, port), timeout=1.0)
            break
        except OSError as err:  # rank 0 may not listen yet
            if time.monotonic() > deadline:
                fail(f"cannot reach rank 0 at {addr}:{port}: {err}")
            time.sleep(0.05)
    conn.sendall(f"{rank} {me}\n".encode())
    reply = read_line(conn, deadline)
    conn.close()
    if not reply.startswith("go "):
        fail(f"unexpected reply from rank 0: {reply!r}")
    return reply[3:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()

    rank = env_int("RANK")
    world = env_int("WORLD_SIZE")
    port = env_int("MASTER_PORT")
    addr = os.environ.get("MASTER_ADDR") or fail("MASTER_ADDR is not set")
    if not 0 <= rank < world:
        fail(f"RANK={rank} is outside WORLD_SIZE={world}")
    me = socket.gethostname()
    deadline = time.monotonic() + args.timeout
    if rank == 0:
        hosts = rank0(port, world, me, deadline)
    else:
        hosts = other_rank(addr, port, rank, me, deadline)
    print(f"rank {rank}/{world} on {me}: barrier passed, hosts {hosts}", flush=True)
    # The CPUs the agent pinned this rank to (the placement checks read this line).
    cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    print(f"rank {rank} cpus {cpus}", flush=True)
    if args.sleep > 0:
        time.sleep(args.sleep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
