"""A rank of a job whose workers' store is served by node 0's agent (rendezvous.worker_store:
agent) or by rank 0 (rank0): checks the environment says which, then init_process_group over
Gloo, an all_reduce and a barrier, and prints one line the test looks for."""
import os
import sys

import torch
import torch.distributed as dist


def main():
    expect = sys.argv[1]  # "agent" or "rank0"
    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE")
    if (agent == "True") != (expect == "agent"):
        print(f"TORCHELASTIC_USE_AGENT_STORE={agent!r} for a {expect} store", file=sys.stderr)
        return 1
    dist.init_process_group("gloo")  # env:// -- RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.tensor([float(rank)])
    dist.all_reduce(t)
    if t.item() != world * (world - 1) / 2:
        print(f"rank {rank}: all_reduce gave {t.item()}", file=sys.stderr)
        return 1
    dist.barrier()
    print(f"rank {rank} of {world}: torch {torch.__version__}, {expect} store, "
          f"all_reduce {t.item():g}, barrier passed", flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # torch 1.13's Gloo teardown at interpreter exit can hang once peers are gone; the check is
    # done, so leave without running it (as torch_allreduce.py).
    os._exit(code)
