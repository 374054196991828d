"""A 5-step DDP job (gloo, env://): what a first run of a user's script costs end to end. It
imports torch, joins the process group, takes five steps of a small model and leaves; the
preflight bench times it with the preflight importing torch, locating it, and off."""
import os
import sys

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(5):
        loss = model(torch.randn(8, 16)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank {dist.get_rank()} step {step} loss {loss.item():.3f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    # torch 1.13's Gloo teardown at interpreter exit can hang once peers are gone.
    os._exit(0)
