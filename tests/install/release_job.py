"""A rank of release_session.sh's jobs: writes who it is and which agent and launcher it runs
under into the job directory; with `sleep`, then waits to be interrupted."""
import os
import sys
import time


def exe(pid):
    return os.readlink(f"/proc/{pid}/exe")


def main():
    job_dir, rank = os.environ["DLAUNCH_JOB_DIR"], os.environ["RANK"]
    agent = os.getppid()
    with open(f"/proc/{agent}/stat") as f:
        launcher = int(f.read().rsplit(")", 1)[1].split()[1])
    with open(os.path.join(job_dir, f"rank-{rank}.exe"), "w") as f:
        f.write(f"agent={exe(agent)}\nlauncher={exe(launcher)}\n")
    text = f"rank {rank} of {os.environ['WORLD_SIZE']} on node {os.environ['GROUP_RANK']}"
    # Written last and whole (a rename), so a reader that sees the file sees the rank started.
    with open(os.path.join(job_dir, f".rank-{rank}.txt"), "w") as f:
        f.write(text + "\n")
    os.rename(os.path.join(job_dir, f".rank-{rank}.txt"), os.path.join(job_dir, f"rank-{rank}.txt"))
    if sys.argv[1:] == ["sleep"]:
        time.sleep(600)


if __name__ == "__main__":
    main()
