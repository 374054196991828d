"""An unmodified PyTorch DDP script (gloo, env://, no dlaunch reports) in which one rank stops
in its own code while its peers block in the next collective (python_stacks_test.cc).

    ddp_stopped_rank.py STOP_RANK [--worker-main]
        rank STOP_RANK stops in load_batch at step 6; --worker-main: the training runs inside
        PyTorch 2.x's worker_main(), which serves torch's debug handlers (stacks, the flight
        recorder) on TORCH_WORKER_SERVER_SOCKET

Every rank prints a line every other step. Before it stops, the stopped rank says what it
fetches, twice, 2 s apart, so it is the last rank the launcher heard from: the rank silent
longest is a peer that waits for it."""
import os
import sys
import time

import torch
import torch.distributed as dist


def load_batch(step, stop_rank):
    if step == 6 and dist.get_rank() == stop_rank:
        print(f"rank {dist.get_rank()}: fetching batch {step} from the data server", flush=True)
        # Its peers block in backward meanwhile; this line comes a heartbeat or more after
        # their last ones.
        time.sleep(2)
        print(f"rank {dist.get_rank()}: still waiting for the data server", flush=True)
        time.sleep(3600)  # stuck here (load_batch)
    return torch.randn(8, 4)


def main(stop_rank):
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(1000):
        x = load_batch(step, stop_rank)
        loss = model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 2 == 0:
            print(f"rank {dist.get_rank()} step {step} loss {loss.item():.3f}", flush=True)
        time.sleep(0.2)


if __name__ == "__main__":
    if "--worker-main" in sys.argv[2:]:
        from torch.distributed.elastic.control_plane import worker_main

        with worker_main():
            main(int(sys.argv[1]))
    else:
        main(int(sys.argv[1]))
    sys.stdout.flush()
    os._exit(0)
