"""The goodput bench's training job: a real PyTorch 2.x DDP job on the CPU (gloo), the same under
every launcher. An MLP on synthetic data, SGD, a checkpoint of model and optimizer every
--ckpt-every steps written by rank 0 (through a temporary file and a rename), every rank resuming
from the newest one at start. It reports through the dlaunch package (python/: steps, phases,
checkpoints; it does nothing without DLAUNCH_REPORT_SOCKET) and, under ft_launcher, sends
nvidia-resiliency-ext's rank heartbeats (--ft-heartbeats).

Whatever the launcher, every rank appends its own time stamps (Unix seconds) to
<stamps>/rank<R>-<pid>.jsonl, which goodput_tables.py reads:

  start        the process's start (/proc/self/stat), before the interpreter ran
  imported     `import torch` done (and torch.distributed, nn)
  pg           init_process_group returned (every rank has met)
  loaded       the model built, DDP wrapped, the newest checkpoint loaded (`resumed` its step)
  step         rank 0 only: each step's end (`step`); the first one of a process is its first
               step, which includes DDP's first bucket set-up
  ckpt         rank 0: a checkpoint's begin and end (`b`, `e`, `step`)
  done         the last step reached

The round is the number of faults the bench had injected when the process started (the bench
writes them to <stamps>/faults), counted alike under every launcher.

--in-process (dlaunch's `restart: in_process`): the training runs under dlaunch.inprocess.wrap;
a rank kept in its process is called again with its model and optimizer (it stamps `start` and
`imported` when called again, with kept: true, and counts its round anew), and every rank of a
round takes the newest state by broadcast (sync_state) after loading the newest checkpoint.
--nvrx: the same under nvidia-resiliency-ext's inprocess.Wrapper (its own store and monitor).
"""
import argparse
import json
import os
import sys
import time

import dlaunch  # the standard library only: costs nothing next to torch
import dlaunch.inprocess


def process_start_unix():
    with open("/proc/self/stat") as f:
        stat = f.read()
    start_ticks = int(stat[stat.rindex(")") + 2:].split()[19])
    since_boot = time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")
    return time.time() - since_boot


class Stamps:
    def __init__(self, directory, rank):
        self.rank = rank
        self.directory = directory
        self.path = os.path.join(directory, f"rank{rank}-{os.getpid()}.jsonl")
        self.count_round()

    def count_round(self):
        try:
            with open(os.path.join(self.directory, "faults")) as f:
                self.round = sum(1 for _ in f)
        except FileNotFoundError:
            self.round = 0

    def __call__(self, event, t=None, **fields):
        fields.update(e=event, t=time.time() if t is None else t, rank=self.rank, round=self.round,
                      pid=os.getpid())
        with open(self.path, "a") as f:
            f.write(json.dumps(fields) + "\n")


def newest_checkpoint(directory):
    steps = [int(n[5:-3]) for n in os.listdir(directory)
             if n.startswith("ckpt-") and n.endswith(".pt") and n[5:-3].isdigit()]
    return max(steps, default=0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--ckpt-every", type=int, default=100)
    p.add_argument("--ckpt-dir", required=True)
    p.add_argument("--stamps", required=True)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--pg-timeout", type=float, default=30.0,
                   help="gloo's collective timeout (s): how long a rank waits for a stopped peer")
    p.add_argument("--ft-heartbeats", action="store_true")
    p.add_argument("--in-process", action="store_true", help="under dlaunch.inprocess.wrap")
    p.add_argument("--nvrx", action="store_true", help="under nvidia_resiliency_ext's Wrapper")
    args = p.parse_args()
    rank = int(os.environ["RANK"])
    stamp = Stamps(args.stamps, rank)
    stamp("start", t=process_start_unix())

    with dlaunch.phase("import"):
        import datetime

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
    stamp("imported")
    torch.set_num_threads(1)
    hb = None
    if args.ft_heartbeats:
        from nvidia_resiliency_ext.fault_tolerance import RankMonitorClient
        hb = RankMonitorClient()
        hb.init_workload_monitoring()

    kept = {}  # what a rank kept in its process holds across calls (--in-process, --nvrx)

    def train(info=None, **_):
        stamp.rank = int(os.environ.get("RANK", stamp.rank))  # its place in this round
        if kept:  # called again in its process
            stamp.count_round()
            stamp("start", kept=True)
            stamp("imported", kept=True)
        run(args, stamp, hb, kept, info, torch, dist, nn, DDP, datetime)

    if args.in_process:
        dlaunch.inprocess.wrap(train)()
    elif args.nvrx:
        nvrx_wrapped(train, args)()
    else:
        train()
    return 0


def nvrx_wrapped(fn, args):
    import datetime

    from nvidia_resiliency_ext import inprocess
    # The CPU has no CUDA context to check or abort: no health check; gloo's group is aborted
    # by destroying it.
    return inprocess.Wrapper(
        health_check=None,
        heartbeat_timeout=datetime.timedelta(seconds=3),
        soft_timeout=datetime.timedelta(seconds=30),
        hard_timeout=datetime.timedelta(seconds=60),
        monitor_thread_interval=datetime.timedelta(seconds=0.2),
        monitor_process_interval=datetime.timedelta(seconds=0.2),
        heartbeat_interval=datetime.timedelta(seconds=0.5),
        last_call_wait=datetime.timedelta(seconds=0.2),
    )(fn)


def run(args, stamp, hb, kept, info, torch, dist, nn, DDP, datetime):
    rank = int(os.environ["RANK"])
    timeout = datetime.timedelta(seconds=args.pg_timeout)
    with dlaunch.phase("process_group"):
        if args.nvrx:
            # The Wrapper's own store holds MASTER_PORT: the job's store is the next port, made
            # once (rank 0 survives both faults), keyed per call.
            if "store" not in kept:
                kept["store"] = dist.TCPStore(
                    os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]) + 1,
                    is_master=os.environ["RANK"] == "0", multi_tenant=True,
                    wait_for_workers=False, timeout=timeout)
            kept["calls"] = kept.get("calls", 0) + 1
            dist.init_process_group(
                "gloo", store=dist.PrefixStore(f"call{kept['calls']}", kept["store"]),
                rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]),
                timeout=timeout)
        else:
            dist.init_process_group("gloo", timeout=timeout)
    rank = stamp.rank = dist.get_rank()
    stamp("pg")
    world = dist.get_world_size()

    with dlaunch.phase("load"):
        if "model" in kept:
            model, opt, resumed = kept["model"], kept["opt"], kept["step"]
        else:
            torch.manual_seed(0)
            model = nn.Sequential(nn.Linear(args.width, args.width), nn.ReLU(),
                                  nn.Linear(args.width, args.width), nn.ReLU(),
                                  nn.Linear(args.width, 10))
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            resumed = newest_checkpoint(args.ckpt_dir)
            if resumed:
                state = torch.load(os.path.join(args.ckpt_dir, f"ckpt-{resumed}.pt"))
                model.load_state_dict(state["model"])
                opt.load_state_dict(state["opt"])
        if args.in_process or args.nvrx:
            # The ranks kept in their process are ahead of the checkpoint: the newest state wins.
            resumed = dlaunch.inprocess.sync_state(model, opt, resumed)
            kept.update(model=model, opt=opt, step=resumed)
        ddp = DDP(model)
        g = torch.Generator().manual_seed(rank)
        x = torch.randn(args.batch, args.width, generator=g)
        y = torch.randint(0, 10, (args.batch,), generator=g)
    stamp("loaded", resumed=resumed, world=world)
    dlaunch.total_steps(args.steps)
    if resumed:
        dlaunch.checkpoint_saved(resumed)

    loss_fn = nn.CrossEntropyLoss()
    for step in range(resumed + 1, args.steps + 1):
        opt.zero_grad()
        loss = loss_fn(ddp(x), y)
        loss.backward()
        if info is not None and hasattr(info, "atomic"):
            with info.atomic():  # never half an update: the stop waits for its end
                opt.step()
                kept["step"] = step
        else:
            opt.step()
            kept["step"] = step
        if hb:
            hb.send_heartbeat()
        dlaunch.report(step=step, samples=args.batch, loss=loss.item())
        if rank == 0:
            stamp("step", step=step)
        if step % args.ckpt_every == 0 and step < args.steps:
            if rank == 0:
                b = time.time()
                with dlaunch.phase("checkpoint"):
                    tmp = os.path.join(args.ckpt_dir, f".ckpt-{step}.tmp")
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, tmp)
                    os.rename(tmp, os.path.join(args.ckpt_dir, f"ckpt-{step}.pt"))
                stamp("ckpt", b=b, e=time.time(), step=step)
                dlaunch.checkpoint_saved(step)
            dist.barrier()  # the others wait for the checkpoint, as with a sharded save
    stamp("done", step=args.steps)
    if hb:
        hb.shutdown_workload_monitoring()
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
