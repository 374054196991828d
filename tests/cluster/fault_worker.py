#!/usr/bin/env python3
"""A small multi-rank program for the fault-injection tests, using only the standard library.

Every rank meets rank 0 at MASTER_ADDR:MASTER_PORT (rank 0 listens there, as a real trainer's
store does, so a port that is already taken fails it), then takes a "step" every --step-time
seconds and reports it on DLAUNCH_REPORT_SOCKET, so the launcher sees progress. Rank 0 can write
a checkpoint file every few steps (a full disk fails it). One rank can be told to misbehave in
round 0 (DLAUNCH_ROUND, else TORCHELASTIC_RESTART_COUNT): the tests inject the other faults
from outside.

  fault_worker.py [--steps N] [--round0-steps N] [--step-time S]
                  [--fault {kill,segv,stop,hang-exit} --fault-rank R --fault-step K]
                  [--checkpoint-dir DIR --checkpoint-every K --checkpoint-bytes B]
                  [--stamp-file PATH [--round-from-stamps]] [--ft-heartbeats]

Round 0 runs --round0-steps steps (0: until it is stopped, so a test can inject a fault at its
leisure); later rounds run --steps steps. A rank resumes at the step of the newest checkpoint
in --checkpoint-dir. Before a fault of its own, a rank prints
`fault-worker: rank R FAULT at UNIX_TIME`, the time the tests measure detection from.
With --stamp-file, every rank also appends `EVENT RANK ROUND UNIX_TIME` lines there (start,
barrier, sigterm, the fault, done): the fault benchmark reads them under any launcher. SIGTERM
is stamped and then kills the rank as it would have.
With --ft-heartbeats (off by default; needs nvidia-resiliency-ext, so PyTorch, in the worker's
Python), every rank does what NVIDIA documents for a workload under ft_launcher: a
RankMonitorClient, init_workload_monitoring before the barrier, send_heartbeat after it and after
every step, so ft_launcher's rank monitors see a stalled or hung rank; the import comes after
the start stamp.
Exit status: 0 after the last step, 1 on a bad environment, a barrier or checkpoint failure.
"""
import argparse
import json
import os
import signal
import socket
import sys
import time


STAMP = {"file": None, "rank": -1, "round": 0}


def say(msg):
    print(f"fault-worker: {msg}", flush=True)


def stamp(event):
    """Appends one line to --stamp-file (O_APPEND: ranks of every node share the file)."""
    if STAMP["file"]:
        line = f"{event} {STAMP['rank']} {STAMP['round']} {time.time():.6f}\n"
        fd = os.open(STAMP["file"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, line.encode())
        os.close(fd)


def on_sigterm(signum, _frame):
    stamp("sigterm")
    say(f"rank {STAMP['rank']} sigterm at {time.time():.3f}")
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def fail(msg):
    print(f"fault-worker: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def env_int(name, default=None):
    value = os.environ.get(name)
    if value is None or value == "":
        if default is not None:
            return default
        fail(f"{name} is not set")
    try:
        return int(value)
    except ValueError:
        fail(f"{name}={value!r} is not an integer")


def read_line(conn):
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            raise ConnectionError("peer closed before a full line")
        data += chunk
    return data.decode().strip()


def barrier(rank, world, addr, port, timeout):
    deadline = time.monotonic() + timeout
    if rank == 0:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            server.bind(("0.0.0.0", port))
        except OSError as err:
            stamp("bind-failed")
            say(f"rank 0 bind-failed at {time.time():.3f}")
            fail(f"cannot listen on MASTER_PORT {port}: {err}")
        server.listen(world)
        conns = []
        while len(conns) < world - 1:
            server.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                conn, _ = server.accept()
            except socket.timeout:
                fail(f"barrier timed out: {len(conns) + 1} of {world} ranks arrived")
            conn.settimeout(max(0.1, deadline - time.monotonic()))
            read_line(conn)
            conns.append(conn)
        for conn in conns:
            conn.sendall(b"go\n")
            conn.close()
        server.close()
        return
    while True:
        try:
            conn = socket.create_connection((addr, port), timeout=1.0)
            break
        except OSError as err:  # rank 0 may not listen yet
            if time.monotonic() > deadline:
                fail(f"cannot reach rank 0 at {addr}:{port}: {err}")
            time.sleep(0.05)
    conn.settimeout(max(0.1, deadline - time.monotonic()))
    conn.sendall(f"{rank}\n".encode())
    if read_line(conn) != "go":
        fail("unexpected reply from rank 0")
    conn.close()


class Reporter:
    """WorkerReport lines on the agent's report socket; silent when there is none."""

    def __init__(self):
        self.sock = None
        path = os.environ.get("DLAUNCH_REPORT_SOCKET")
        if path:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
            except OSError as err:
                say(f"no report socket ({err}); progress shows as output lines only")
                self.sock = None

    def step(self, step, interval_s, checkpoint_step):
        if self.sock is None:
            return
        report = {"kind": "STEP", "step": step, "samples": 8, "interval_s": interval_s,
                  "loss": 1.0 / step, "checkpoint_step": checkpoint_step}
        self.sock.sendall((json.dumps(report) + "\n").encode())


class FtHeartbeats:
    """nvidia-resiliency-ext's rank heartbeats (ft_launcher's hang detection); inert when off."""

    def __init__(self, enabled):
        self.client = None
        if enabled:
            from nvidia_resiliency_ext.fault_tolerance import RankMonitorClient
            self.client = RankMonitorClient()
            self.client.init_workload_monitoring()

    def beat(self):
        if self.client:
            self.client.send_heartbeat()

    def close(self):
        if self.client:
            self.client.shutdown_workload_monitoring()


def newest_checkpoint(directory):
    if not directory or not os.path.isdir(directory):
        return 0
    steps = [int(name[5:]) for name in os.listdir(directory)
             if name.startswith("ckpt-") and name[5:].isdigit()]
    return max(steps, default=0)


def write_checkpoint(directory, step, size):
    """Writes ckpt-STEP through a temporary file, as trainers do; exits 1 on a write error."""
    tmp = os.path.join(directory, f".ckpt-{step}.tmp")
    try:
        with open(tmp, "wb") as out:
            out.write(b"\0" * size)
            out.flush()
            os.fsync(out.fileno())
        os.rename(tmp, os.path.join(directory, f"ckpt-{step}"))
    except OSError as err:
        stamp("checkpoint-failed")
        say(f"rank 0 checkpoint-failed at {time.time():.3f}")
        fail(f"writing checkpoint {step} to {directory}: {err}")


def inject(fault, rank):
    stamp(fault)
    say(f"rank {rank} {fault} at {time.time():.3f}")
    if fault == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif fault == "segv":
        signal.signal(signal.SIGSEGV, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGSEGV)
    elif fault == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--round0-steps", type=int, default=0)
    parser.add_argument("--step-time", type=float, default=0.1)
    parser.add_argument("--fault", choices=["kill", "segv", "stop", "hang-exit"])
    parser.add_argument("--fault-rank", type=int, default=-1)
    parser.add_argument("--fault-step", type=int, default=5)
    parser.add_argument("--checkpoint-dir", default="")
    parser.add_argument("--checkpoint-every", type=int, default=0)
    parser.add_argument("--checkpoint-bytes", type=int, default=4096)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--stamp-file", default="")
    parser.add_argument("--round-from-stamps", action="store_true",
                        help="count this rank's earlier starts in --stamp-file as its round "
                             "(torchrun restarts the healthy nodes' workers with "
                             "TORCHELASTIC_RESTART_COUNT unchanged)")
    parser.add_argument("--ft-heartbeats", action="store_true",
                        help="send nvidia-resiliency-ext rank heartbeats (under ft_launcher)")
    args = parser.parse_args()

    rank = env_int("RANK")
    world = env_int("WORLD_SIZE")
    port = env_int("MASTER_PORT")
    addr = os.environ.get("MASTER_ADDR") or fail("MASTER_ADDR is not set")
    round_ = env_int("DLAUNCH_ROUND", env_int("TORCHELASTIC_RESTART_COUNT", 0))
    if args.round_from_stamps and args.stamp_file and os.path.exists(args.stamp_file):
        with open(args.stamp_file) as f:
            round_ = sum(1 for line in f if line.split()[:2] == ["start", str(rank)])
    host = socket.gethostname()
    STAMP.update(file=args.stamp_file, rank=rank, round=round_)
    signal.signal(signal.SIGTERM, on_sigterm)
    stamp("start")
    heartbeats = FtHeartbeats(args.ft_heartbeats)

    barrier(rank, world, addr, port, args.timeout)
    stamp("barrier")
    heartbeats.beat()
    start = newest_checkpoint(args.checkpoint_dir)
    say(f"rank {rank}/{world} on {host} round {round_}: running from step {start}")
    steps = args.round0_steps if round_ == 0 else args.steps
    faulty = round_ == 0 and rank == args.fault_rank
    reporter = Reporter()
    step = start
    checkpoint_step = start
    while steps == 0 or step < start + steps:
        time.sleep(args.step_time)
        step += 1
        if (rank == 0 and args.checkpoint_dir and args.checkpoint_every > 0
                and step % args.checkpoint_every == 0):
            write_checkpoint(args.checkpoint_dir, step, args.checkpoint_bytes)
            checkpoint_step = step
        reporter.step(step, args.step_time, checkpoint_step)
        heartbeats.beat()
        if step % 5 == 0:
            say(f"rank {rank} step {step}")
        if faulty and step == args.fault_step and args.fault != "hang-exit":
            inject(args.fault, rank)
    if faulty and args.fault == "hang-exit":
        stamp("hang-exit")
        say(f"rank {rank} hang-exit at {time.time():.3f}")
        while True:  # as a rank stuck in its communication library's teardown
            time.sleep(3600)
    heartbeats.close()
    stamp("done")
    say(f"rank {rank} done at step {step}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
