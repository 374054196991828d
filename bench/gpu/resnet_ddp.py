#!/usr/bin/env python3
"""torchvision's ResNet under PyTorch DDP on CUDA: the Python side of dlaunch-worker's GPU bench.

Synthetic images (3x224x224 by default), 10 classes as dlaunch-worker's synthetic set, SGD with
momentum, NCCL, bf16 autocast or fp32, optionally channels-last and torch.compile. Started by a
launcher (torchrun-style environment; under `dlaunch run` in device_check.sh). Throughput is
timed from the end of the first step, as dlaunch-worker times it, and written in the same
--summary-json fields (samples_per_sec_total, time_to_first_step_s).
"""
import argparse
import json
import os
import time


def seconds_since_process_start():
    with open("/proc/self/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2:].split()
    return time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["resnet18", "resnet34", "resnet50"], default="resnet50")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--amp", choices=["off", "bf16"], default="bf16")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--compile", action="store_true")
    p.add_argument("--summary-json")
    args = p.parse_args()

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import torchvision
    from torch.nn.parallel import DistributedDataParallel as DDP

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    world, rank = dist.get_world_size(), dist.get_rank()
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(num_classes=10).cuda()
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    ddp = DDP(model, device_ids=[local_rank])
    forward = torch.compile(ddp) if args.compile else ddp
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01 * world, momentum=0.9)
    x = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device="cuda")
    x = x.contiguous(memory_format=fmt)
    y = torch.randint(0, 10, (args.batch_size,), device="cuda")
    dtype = torch.bfloat16 if args.amp == "bf16" else None

    first_step_s, start = 0.0, time.perf_counter()
    for step in range(args.steps):
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            loss = F.cross_entropy(forward(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step == 0:
            torch.cuda.synchronize()
            first_step_s, start = seconds_since_process_start(), time.perf_counter()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    rate = torch.tensor([(args.steps - 1) * args.batch_size / elapsed], device="cuda")
    dist.all_reduce(rate)
    if rank == 0 and args.summary_json:
        with open(args.summary_json, "w") as f:
            json.dump({"model": args.model, "amp": args.amp, "channels_last": args.channels_last,
                       "compiled": args.compile, "torch": torch.__version__, "world_size": world,
                       "batch_size": args.batch_size, "steps": args.steps,
                       "samples_per_sec_total": rate.item(), "final_loss": loss.item(),
                       "time_to_first_step_s": first_step_s,
                       "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30}, f)
            f.write("\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
