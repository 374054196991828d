"""init_process_group over Gloo with the init method given: env://, or tcp:// to MASTER_ADDR and
MASTER_PORT with RANK and WORLD_SIZE passed explicitly; then an all_reduce of one-hot tensors:
the sum is the world size only when every rank took part with a rank of its own. One method per
job: a second init in the same job would meet the first one's store at MASTER_PORT (rank 0's,
going away, or the agent's, holding the first init's keys)."""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F


def main():
    method = sys.argv[1]
    if method == "tcp":
        dist.init_process_group("gloo", init_method=f"tcp://{os.environ['MASTER_ADDR']}:"
                                f"{os.environ['MASTER_PORT']}", rank=int(os.environ["RANK"]),
                                world_size=int(os.environ["WORLD_SIZE"]))
    else:
        dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    t = F.one_hot(torch.tensor(rank), num_classes=world)
    dist.all_reduce(t)
    derived = int(torch.sum(t).item())
    dist.barrier()
    dist.destroy_process_group()
    if derived != world or world != int(os.environ["WORLD_SIZE"]):
        print(f"rank {rank}: all_reduce derived a world of {derived}, not {world}", file=sys.stderr)
        return 1
    print(f"init_method {method}: rank {rank} of {world} ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
