"""A real PyTorch 2.x DDP job (CPU, gloo) under dlaunch.inprocess.wrap, for the in-process restart's
test and bench. An MLP, SGD with momentum, data a function of (rank, step): a run's parameters
depend only on the steps it took, not on how many times it was restarted, so the digest its rank 0
prints at the end ("digest <sha256 of every parameter's bytes>") can be compared with an
uninterrupted run's.

  --fault-rank R --fault-step K   rank R SIGKILLs itself right after step K, in round 0 only
  --fault-when-warm N             the faulting rank first waits until N agents' warm processes
                                  serve (their agent logs say so): its replacement starts warm
  --respawn                       no wrapper: every rank of the next round is a new process that
                                  resumes from the newest checkpoint (the respawn path, to compare)
  --stamps DIR                    time stamps per process (Unix seconds) in DIR/rank<R>-<pid>.jsonl:
                                  start, imported, pg (process group made), synced (state in
                                  place), step (its first step of a round), fault, done

Every (re)start, in a new process or in the kept one, runs one backward of a zero loss before its
first real step: DDP lays its gradient buckets out anew after its first backward, and the layout
decides the order Gloo adds gradients in; with the warm-up every round steps with the same layout
as an uninterrupted run (as dlaunch-worker does on resume, docs/restarts.md).
"""
import argparse
import hashlib
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python",
                                "src"))
import dlaunch.inprocess  # noqa: E402  (the standard library only)


def process_start_unix():
    with open("/proc/self/stat") as f:
        stat = f.read()
    start_ticks = int(stat[stat.rindex(")") + 2:].split()[19])
    since_boot = time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")
    return time.time() - since_boot


def stamp(args, event, t=None, **fields):
    if not args.stamps:
        return
    fields.update(e=event, t=time.time() if t is None else t, rank=int(os.environ["RANK"]),
                  round=int(os.environ.get("DLAUNCH_ROUND", "0")), pid=os.getpid())
    with open(os.path.join(args.stamps, f"rank{os.environ['RANK']}-{os.getpid()}.jsonl"), "a") as f:
        f.write(json.dumps(fields) + "\n")


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--fault-rank", type=int, default=-1)
    p.add_argument("--fault-step", type=int, default=0)
    p.add_argument("--fault-when-warm", type=int, default=0)
    p.add_argument("--respawn", action="store_true")
    p.add_argument("--ckpt-dir", default="")
    p.add_argument("--stamps", default="")
    # Kept ranks make the next round's group at once and wait there for the ranks started anew,
    # which import torch first (10-20 s on a loaded machine).
    p.add_argument("--pg-timeout", type=float, default=180.0)
    return p.parse_args()


def main():
    args = parse()
    stamp(args, "start", t=process_start_unix())
    import datetime

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    stamp(args, "imported")
    torch.set_num_threads(1)
    kept = {}  # lives as long as the process: what an in-process restart keeps

    def build():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(args.width, args.width), nn.ReLU(),
                              nn.Linear(args.width, 10))
        return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def batch(rank, step):
        g = torch.Generator().manual_seed(rank * 100003 + step)
        return (torch.randn(args.batch, args.width, generator=g),
                torch.randint(0, 10, (args.batch,), generator=g))

    def train(info):
        if info.restarts:
            stamp(args, "kept")
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
        stamp(args, "pg")
        rank = dist.get_rank()
        if "model" not in kept:
            kept["model"], kept["opt"] = build()
            kept["step"] = load_checkpoint(args, kept) if args.respawn else 0
        model, opt = kept["model"], kept["opt"]
        if not args.respawn:
            kept["step"] = dlaunch.inprocess.sync_state(model, opt, kept["step"])
        ddp = DDP(model)
        ddp(torch.zeros(1, args.width)).sum().mul(0).backward()  # the warm-up: see the top
        opt.zero_grad()
        stamp(args, "synced", step=kept["step"])
        loss_fn = nn.CrossEntropyLoss()
        first = True
        for step in range(kept["step"] + 1, args.steps + 1):
            x, y = batch(rank, step)
            opt.zero_grad()
            loss_fn(ddp(x), y).backward()
            with info.atomic():  # never half an update: the stop waits for the end
                opt.step()
                kept["step"] = step
            if first:
                stamp(args, "step", step=step)
                first = False
            if args.respawn and args.ckpt_dir and rank == 0:
                save_checkpoint(args, kept)
            if (rank == args.fault_rank and step == args.fault_step and
                    os.environ.get("DLAUNCH_ROUND", "0") == "0"):
                wait_for_warm(args.fault_when_warm)
                stamp(args, "fault", step=step)
                os.kill(os.getpid(), signal.SIGKILL)
        digest = hashlib.sha256()
        for p in model.parameters():  # the bytes without NumPy, which torch 2.x does not bring
            digest.update(bytes(p.detach().contiguous().view(-1).view(torch.uint8).tolist()))
        if rank == 0:
            print(f"digest {digest.hexdigest()} step {kept['step']} restarts {info.restarts}",
                  flush=True)
        stamp(args, "done", step=kept["step"])
        dist.barrier()
        dist.destroy_process_group()

    if args.respawn:
        train(dlaunch.inprocess.RestartInfo(int(os.environ.get("DLAUNCH_ROUND", "0")), 0))
    else:
        dlaunch.inprocess.wrap(train)()
    return 0


def wait_for_warm(nodes):
    """Until `nodes` agents' logs say their warm process serves (restarts.warm_start)."""
    logs = os.path.join(os.environ.get("DLAUNCH_JOB_DIR", ""), "logs")
    deadline = time.time() + 300
    while nodes and time.time() < deadline:
        serving = 0
        for node in range(nodes):
            try:
                with open(os.path.join(logs, f"agent-{node}.log"), errors="replace") as f:
                    serving += "serving" in f.read()
            except OSError:
                pass
        if serving == nodes:
            return
        time.sleep(0.05)


def save_checkpoint(args, kept):
    import torch
    tmp = os.path.join(args.ckpt_dir, ".ckpt.tmp")
    torch.save({"model": kept["model"].state_dict(), "opt": kept["opt"].state_dict(),
                "step": kept["step"]}, tmp)
    os.replace(tmp, os.path.join(args.ckpt_dir, "ckpt.pt"))


def load_checkpoint(args, kept):
    import torch
    path = os.path.join(args.ckpt_dir, "ckpt.pt") if args.ckpt_dir else ""
    if not path or not os.path.exists(path):
        return 0
    state = torch.load(path)
    kept["model"].load_state_dict(state["model"])
    kept["opt"].load_state_dict(state["opt"])
    return state["step"]


if __name__ == "__main__":
    sys.exit(main())
