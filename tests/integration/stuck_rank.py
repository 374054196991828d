"""A plain Python rank (no PyTorch) that gets stuck in a named function, for the tests of the
stacks dlaunch takes of hung ranks (python_stacks_test.cc).

    stuck_rank.py stall       prints three steps, then waits forever in wait_for_data()
    stuck_rank.py exit-hang   rank 0 leaves a non-daemon thread in drain_queue() that never ends,
                              so its interpreter hangs at exit; the other ranks exit 0

It imports nothing of PyTorch (nor does the preflight then check for it); stuck_torch_rank.py
runs it inside PyTorch 2.x's worker server.
"""
import os
import sys
import threading
import time


def wait_for_data():
    while True:
        time.sleep(0.05)  # stuck here (stall)


def train_step(step):
    print(f"step {step}", flush=True)
    if step == 2:
        wait_for_data()


def drain_queue():
    while True:
        time.sleep(0.05)  # stuck here (exit-hang)


def main(mode):
    if mode == "stall":
        for step in range(10):
            train_step(step)
    elif mode == "exit-hang":
        if os.environ.get("RANK") == "0":
            threading.Thread(target=drain_queue, name="drain").start()
        print("done", flush=True)
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1])
