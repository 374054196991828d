#!/usr/bin/python3
"""The same training loop as dlaunch-worker, in Python with torch.nn.parallel.DistributedDataParallel.

Used by run.sh to compare throughput and start-up side by side: same models (PyTorch MNIST CNN,
784-512-256-10 MLP), synthetic 1x28x28 data from a pool of 1024 samples, batch per rank, SGD with
momentum, learning rate scaled by world size, Gloo, one thread per rank. Throughput is timed from
the end of the first step, and time to first step from process start (/proc/self/stat), exactly as
dlaunch-worker reports them in --summary-json.
"""
import argparse
import json
import os
import time


def seconds_since_process_start():
    with open("/proc/self/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2:].split()
    start_ticks = int(fields[19])  # field 22 overall
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--summary-json")
    p.add_argument("--compile", action="store_true",
                   help="train through torch.compile(DDP(model)) (PyTorch 2.x; inductor on the CPU)")
    args = p.parse_args()

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("gloo", rank=rank, world_size=world)

    class Net(nn.Module):  # examples/mnist
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.dropout2 = nn.Dropout(0.5)
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.relu(self.conv2(x))
            x = self.dropout1(F.max_pool2d(x, 2))
            x = self.dropout2(F.relu(self.fc1(torch.flatten(x, 1))))
            return F.log_softmax(self.fc2(x), dim=1)

    torch.manual_seed(args.seed)
    if args.model == "cnn":
        model = Net()
    else:
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256),
                              nn.ReLU(), nn.Linear(256, 10), nn.LogSoftmax(dim=1))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr * world, momentum=0.9)
    # The first step then includes the compilation: it shows in time_to_first_step_s, and the
    # samples/s are timed from the end of that step as for every variant.
    forward = torch.compile(ddp) if args.compile else ddp

    gen = torch.Generator().manual_seed(args.seed ^ 0x5EEDDA7A)
    pool_x = torch.randn(1024, 1, 28, 28, generator=gen)
    pool_y = torch.randint(0, 10, (1024,), generator=gen)
    dataset_size = 60000
    steps_per_epoch = dataset_size // (world * args.batch_size)

    ddp.train()
    first_step_s = 0.0
    timed_start = time.perf_counter()
    epoch, indices = -1, None
    for step in range(args.steps):
        if step // steps_per_epoch != epoch:
            epoch = step // steps_per_epoch
            g = torch.Generator().manual_seed(args.seed * 1000003 + epoch)
            perm = torch.randperm(dataset_size, generator=g)
            indices = perm[rank:steps_per_epoch * world * args.batch_size:world]
        off = (step % steps_per_epoch) * args.batch_size
        idx = indices[off:off + args.batch_size] % 1024
        x, y = pool_x.index_select(0, idx), pool_y.index_select(0, idx)
        torch.manual_seed(args.seed + rank * 7919 + step)
        loss = F.nll_loss(forward(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step == 0:
            first_step_s = seconds_since_process_start()
            timed_start = time.perf_counter()
    elapsed = time.perf_counter() - timed_start
    per_rank = torch.tensor([(args.steps - 1) * args.batch_size / elapsed], dtype=torch.float64)
    dist.all_reduce(per_rank)
    per_rank = per_rank.item() / world
    if rank == 0 and args.summary_json:
        with open(args.summary_json, "w") as f:
            json.dump({"model": args.model, "compiled": args.compile,
                       "torch": torch.__version__, "world_size": world, "batch_size": args.batch_size,
                       "steps": args.steps, "samples_per_sec_total": per_rank * world,
                       "samples_per_sec_per_rank": per_rank, "final_loss": loss.item(),
                       "time_to_first_step_s": first_step_s,
                       "wall_time_s": seconds_since_process_start()}, f)
            f.write("\n")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
