"""A plain Python training loop (no torch) that reports through the dlaunch package (python/):
a start-up phase ("setup", 0.3 s), the total, a step every 50 ms with samples and loss, a
checkpoint phase of 0.2 s at step 10 (far shorter than a heartbeat apart from the steps around
it) and the checkpoint's step after it (dlaunch_run_test.cc). The package is found through
PYTHONPATH, as after `pip install ./python`."""
import sys
import time

import dlaunch


def main():
    if not dlaunch.is_active():
        print("not under dlaunch: DLAUNCH_REPORT_SOCKET is not set", file=sys.stderr)
        return 3
    with dlaunch.phase("setup"):
        time.sleep(0.3)
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
