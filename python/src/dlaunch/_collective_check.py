"""The collective check's torch engine (docs/stragglers.md, "Before round 0").

The agent runs this with the job's own Python interpreter when every node of the check has torch,
so that the link is measured by the collective library the job will use: Gloo on CPU nodes, NCCL
where CUDA is available (every node must agree; the launcher says which). The agent embeds this
file and passes it with -c, so the node needs no dlaunch package. Standard library and torch only.

Input, one JSON object on a line: the first argument, or, when that is the path of a FIFO, read
from it. The agent starts the program early with a FIFO, so that the interpreter's start and
`import torch` (seconds) overlap the node's wait for its peers; a line "skip" (the nodes measure
with the agents' own loop after all) ends it. Else on standard input:
  {"backend": "gloo"|"nccl", "n": N, "index": I, "addr": MY_ADDR, "bytes": B, "group": G,
   "timeout_s": T, "peers": {"<position>": {"addr": A, "port": P}, ...}}
where peers holds this node, its two ring neighbours and its group's first node (a node needs
no other's address, so the input stays small at any N).
Output, one JSON object on standard output (the fields of proto CollectiveFigures):
  {"to_right_bps": .., "to_left_bps": .., "allreduce_bps": .., "allreduce_s": .., "error": ".."}

Design (never all-to-all): node I hosts a TCPStore on its own port. The link between I and its
right neighbour is a process group of the two, on I's store; the all-reduce runs in a group of at
most G consecutive nodes (the last group takes the remainder), on the store of its first node. So
each node talks to its two neighbours and its group, whatever the ring's length. Each link is
timed three times, the best kept: with Gloo, the bytes sent to the neighbour until it acknowledged
them (so each direction has its own figure); with NCCL, an all-reduce of the pair (untested on
hardware: the figure is the pair's, both directions alike).
"""
import datetime
import json
import os
import sys
import threading
import time

ROUNDS = 3
DATA_TAG = 1
ACK_TAG = 2


def group_of(index, n, group):
    """The first ring position and size of index's all-reduce group."""
    group = max(group, 2)
    groups = max(1, n // group)
    g = min(index // group, groups - 1)
    start = g * group
    return start, (n - start if g == groups - 1 else group)


def make_group(dist, torch, backend, store, rank, size, addr, timeout):
    if backend == "nccl":
        return dist.ProcessGroupNCCL(store, rank, size, timeout)
    opts = dist.ProcessGroupGloo._Options()
    opts._timeout = timeout
    # The device binds to the address the node gives the job, not whatever its hostname resolves to.
    opts._devices = [dist.ProcessGroupGloo.create_device(hostname=addr)]
    return dist.ProcessGroupGloo(store, rank, size, opts)


def time_link(torch, backend, pg, rank, nbytes, device):
    """Bytes per second to the other end of the pair `pg`: the best of ROUNDS."""
    peer = 1 - rank
    count = max(1, nbytes // 4)
    out = torch.ones(count, dtype=torch.float32, device=device)
    into = torch.empty(count, dtype=torch.float32, device=device)
    ack = torch.ones(1, dtype=torch.float32, device=device)
    ack_in = torch.empty(1, dtype=torch.float32, device=device)
    best = 0.0
    for _ in range(ROUNDS):
        start = time.perf_counter()
        if backend == "nccl":
            pg.allreduce([out]).wait()
            torch.cuda.synchronize()
        else:
            # Gloo sends once the peer has posted the matching receive: post every receive first.
            got = pg.recv([into], peer, DATA_TAG)
            acked = pg.recv([ack_in], peer, ACK_TAG)
            sent = pg.send([out], peer, DATA_TAG)
            got.wait()
            ack_sent = pg.send([ack], peer, ACK_TAG)
            acked.wait()  # the peer has all of ours
            sent.wait()
            ack_sent.wait()
        best = max(best, nbytes / max(time.perf_counter() - start, 1e-9))
    return best


def allreduce(torch, backend, pg, pos, size, nbytes, device):
    """(bytes per second, seconds) of one all-reduce of nbytes in the group, its sum checked."""
    count = max(size, nbytes // 4)
    warm = torch.ones(size, dtype=torch.float32, device=device)
    pg.allreduce([warm]).wait()  # the group's connections, outside the timing
    data = torch.full((count,), float(pos + 1), dtype=torch.float32, device=device)
    if backend == "nccl":
        torch.cuda.synchronize()
    start = time.perf_counter()
    pg.allreduce([data]).wait()
    if backend == "nccl":
        torch.cuda.synchronize()
    took = time.perf_counter() - start
    want = size * (size + 1) / 2
    if float(data[0]) != want or float(data[-1]) != want:
        raise RuntimeError("all-reduce summed to %g, not %g" % (float(data[0]), want))
    return nbytes / max(took, 1e-9), took


def run(spec):
    import torch
    import torch.distributed as dist

    backend = spec["backend"]
    index, n, nbytes = int(spec["index"]), int(spec["n"]), int(spec["bytes"])
    ring = {int(k): v for k, v in spec["peers"].items()}
    timeout = datetime.timedelta(seconds=float(spec["timeout_s"]))
    device = "cpu"
    if backend == "nccl":
        torch.cuda.set_device(0)
        device = "cuda"
    me = ring[index]
    own = dist.TCPStore(me["addr"], int(me["port"]), None, True, timeout, wait_for_workers=False)
    stores = {index: own}

    def store_of(i):
        if i not in stores:
            stores[i] = dist.TCPStore(ring[i]["addr"], int(ring[i]["port"]), None, False, timeout)
        return stores[i]

    def pair(host):  # the link between `host` and its right neighbour, on host's store
        store = dist.PrefixStore("link%d" % host, store_of(host))
        return make_group(dist, torch, backend, store, 0 if host == index else 1, 2, spec["addr"], timeout)

    right, left = (index + 1) % n, (index - 1) % n
    result = {"to_right_bps": 0.0, "to_left_bps": 0.0, "allreduce_bps": 0.0}
    errors = []

    def measure(key, host, rank):
        try:
            result[key] = time_link(torch, backend, pair(host), rank, nbytes, device)
        except Exception as e:  # the figure stays 0: the node reads as slow, with the reason
            errors.append("%s: %s" % (key, e))

    if n > 2:
        links = [("to_right_bps", index, 0), ("to_left_bps", left, 1)]
    else:  # two nodes have one link, on node 0's store
        links = [("to_right_bps", 0, index)]
    threads = [threading.Thread(target=measure, args=link) for link in links]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if n == 2:
        result["to_left_bps"] = result["to_right_bps"]
    start, size = group_of(index, n, int(spec["group"]))
    try:
        store = dist.PrefixStore("group%d" % start, store_of(start))
        pg = make_group(dist, torch, backend, store, index - start, size, spec["addr"], timeout)
        result["allreduce_bps"], result["allreduce_s"] = allreduce(
            torch, backend, pg, index - start, size, nbytes, device)
    except Exception as e:
        errors.append("all-reduce: %s" % e)
    # A node's store serves its right neighbour's link and, for a group's first node, the group:
    # it stays up until they are done with it.
    for i, s in stores.items():
        if i != index:
            s.set("done%d" % index, "1")
    users = set()
    if n > 2 or index == 0:
        users.add(right)
    if start == index:
        users.update(range(start + 1, start + size))
    users.discard(index)
    try:
        own.wait(["done%d" % u for u in sorted(users)], timeout)
    except Exception as e:
        errors.append("waiting for the peers to finish: %s" % e)
    if errors:
        result["error"] = "; ".join(errors)
    return result


def read_input():
    if len(sys.argv) < 2:
        return sys.stdin.read()
    if sys.argv[1].lstrip().startswith("{"):
        return sys.argv[1]
    # Read and write: the FIFO has a reader from now on (the agent's non-blocking open succeeds),
    # and a line is read whole once the agent has written it.
    fd = os.open(sys.argv[1], os.O_RDWR)
    try:
        import torch.distributed  # noqa: F401  (the seconds the early start is for)
    except Exception:
        pass  # run() says why
    with os.fdopen(fd, "r") as f:
        return f.readline()


def main():
    text = read_input()
    if text.strip() == "skip":
        return 0
    try:
        result = run(json.loads(text))
    except Exception as e:
        result = {"error": "%s: %s" % (type(e).__name__, e)}
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
