"""init_process_group over Gloo twice, once with each init method a torchrun program uses: env://
and tcp:// to MASTER_ADDR and MASTER_PORT with RANK and WORLD_SIZE passed explicitly. Each time
an all_reduce of one-hot tensors: the sum is the world size only when every rank took part with
a rank of its own. (One process for both: every interpreter that imports torch costs seconds.)"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F


def init(method):
    if method == "tcp":
        dist.init_process_group("gloo", init_method=f"tcp://{os.environ['MASTER_ADDR']}:"
                                f"{os.environ['MASTER_PORT']}", rank=int(os.environ["RANK"]),
                                world_size=int(os.environ["WORLD_SIZE"]))
    else:
        dist.init_process_group("gloo", init_method="env://")


def check(method):
    init(method)
    rank, world = dist.get_rank(), dist.get_world_size()
    t = F.one_hot(torch.tensor(rank), num_classes=world)
    dist.all_reduce(t)
    derived = int(torch.sum(t).item())
    # Every rank is done with this store before rank 0's goes away with its process group.
    dist.barrier()
    dist.destroy_process_group()
    if derived != world or world != int(os.environ["WORLD_SIZE"]):
        print(f"rank {rank}: all_reduce derived a world of {derived}, not {world}", file=sys.stderr)
        return False
    print(f"init_method {method}: rank {rank} of {world} ok", flush=True)
    return True


def main():
    return 0 if all(check(method) for method in ("env", "tcp")) else 1


if __name__ == "__main__":
    sys.exit(main())
