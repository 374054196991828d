"""A plain Python training loop (no torch) that reports through the dlaunch package (python/):
the total, a step every 50 ms with samples and loss, and a checkpoint phase at step 10
and the checkpoint's step after it (dlaunch_run_test.cc). The package is found through PYTHONPATH, as after `pip install ./python`."""
import sys
import time

import dlaunch


def main():
    if not dlaunch.is_active():
        print("not under dlaunch: DLAUNCH_REPORT_SOCKET is not set", file=sys.stderr)
        return 3
    dlaunch.total_steps(20)
    for step in range(1, 21):
        time.sleep(0.05)
        dlaunch.report(step=step, samples=32, loss=1.0 / step)
        if step == 10:
            with dlaunch.phase("checkpoint"):
                time.sleep(0.2)
            dlaunch.checkpoint_saved(step)
    return 0


if __name__ == "__main__":
    sys.exit(main())
