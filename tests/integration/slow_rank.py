"""A plain Python training loop (no torch) that reports every step through the dlaunch package:
each step takes STEP_S (0.05 s); rank SLOW_RANK's take SLOW_FACTOR times as long from SLOW_FROM
(0) to SLOW_S seconds after it began, then the same as the others' again; it writes the Unix time
its slowdown began to $DLAUNCH_JOB_DIR/slow-from. Every rank runs for RUN_S seconds. The ranks
do not wait for each other, so their wall time per step tells the slow one (straggler_test.cc,
bench/stragglers/straggler_bench.py). STEP_KIND=spin makes each step a fixed amount of CPU work
(SPIN_LOOPS iterations, about STEP_S on an idle core) instead of a sleep, so a node whose CPU
share is cut is slower (the cluster test's cgroup cpu quota); STEP_KIND=duty spins SPIN_LOOPS and
then sleeps STEP_S, a step of a little CPU work that leaves the cores mostly idle (the clean run's
load: six spinning ranks on two cores are not a clean run, the scheduler's split names one). STEPS > 0 ends each rank after that
many steps instead (a job of fixed work, whose wall time a timer can compare). REPORT=0 sends no
reports at all (a plain script: the straggler score then reads the ranks' CPU counters).
STEP_KIND=allreduce is a duty step followed by an all-reduce of every rank (torch.distributed,
Gloo, env://): a synchronous job, whose ranks all step at the slowest one's pace, so their wall
times per step read alike; it runs until the first rank's RUN_S is up (the all-reduce carries
whether each rank has time left)."""
import os
import sys
import time

import dlaunch


def main():
    reports = os.environ.get("REPORT", "1") != "0"
    if reports and not dlaunch.is_active():
        print("not under dlaunch: DLAUNCH_REPORT_SOCKET is not set", file=sys.stderr)
        return 3
    rank = int(os.environ["RANK"])
    step_s = float(os.environ.get("STEP_S", "0.05"))
    slow = rank == int(os.environ.get("SLOW_RANK", "-1"))
    factor = float(os.environ.get("SLOW_FACTOR", "3"))
    slow_from = float(os.environ.get("SLOW_FROM", "0"))
    slow_s = float(os.environ.get("SLOW_S", "0"))
    run_s = float(os.environ.get("RUN_S", "10"))
    steps = int(os.environ.get("STEPS", "0"))
    kind = os.environ.get("STEP_KIND", "sleep")
    spin = int(os.environ.get("SPIN_LOOPS", "200000")) if kind in ("spin", "duty", "allreduce") else 0
    synchronous = kind == "allreduce"
    if synchronous:
        import torch
        import torch.distributed as dist
        torch.set_num_threads(1)
        dist.init_process_group("gloo")
        flag = torch.zeros(1)
    begun = time.monotonic()
    step = 0
    said = False

    def go_on():
        mine = (step < steps) if steps > 0 else (time.monotonic() - begun < run_s)
        if not synchronous:
            return mine
        flag.fill_(1.0 if mine else 0.0)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)  # the step's collective: every rank waits
        return flag.item() > 0

    while go_on():
        slow_now = slow and slow_from <= time.monotonic() - begun < slow_s
        if slow_now and not said:
            said = True
            with open(os.path.join(os.environ["DLAUNCH_JOB_DIR"], "slow-from"), "w") as f:
                f.write("%.6f\n" % time.time())
        if spin:
            x = 0
            for i in range(spin * (int(factor) if slow_now else 1)):
                x += i
            if kind in ("duty", "allreduce"):
                time.sleep(step_s)
        else:
            time.sleep(step_s * (factor if slow_now else 1))
        step += 1
        if reports:
            dlaunch.report(step=step, samples=8, loss=1.0 / step)
    if synchronous:
        dist.barrier()
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
